"""The CUDA C++ program of a multi-device or multi-thread pipeline: one std::thread per host
thread (per device where the pipeline declares none), peer copies and NCCL collectives.

Each host thread sets its device (cudaSetDevice) and issues its own ops in program order; a
per-thread default stream is ``cudaStreamPerThread``, the calling thread's own stream, used
only by its owning thread; peer copies are cudaMemcpyPeerAsync with peer access enabled between the pairs they
join; collectives are ncclAllReduce / ncclReduceScatter / ncclAllGather / ncclBroadcast on fp32
buffers (ncclFloat), on communicators made with ncclCommInitAll, each call on its op's stream.
Build with ``nvcc -O2 -std=c++17 -o pipeline pipeline.cu -lnccl`` (``-lnccl`` only when the
program has collectives). See :mod:`swimlanes.codegen.multi` for the plan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from swimlanes.codegen import cuda
from swimlanes.codegen.multi import MultiPlan, make_multi_plan, nccl_call, thread_label_changes
from swimlanes.codegen.plan import CodePlan, checked_int, cpp_string_literal, make_plan
from swimlanes.model.document import COLLECTIVE_OPS, Op, Pipeline
from swimlanes.model.op_kinds import register_layer
from swimlanes.units import format_bytes

_NCCL_PRELUDE = r"""#include <nccl.h>

#define CHECK_NCCL(call)                                                         \
    do {                                                                         \
        ncclResult_t res_ = (call);                                              \
        if (res_ != ncclSuccess) {                                               \
            std::fprintf(stderr, "NCCL error %s at line %d%s%s\n",               \
                         ncclGetErrorString(res_), __LINE__,                     \
                         *g_op_label ? " at the op labelled " : "", g_op_label); \
            std::exit(1);                                                        \
        }                                                                        \
    } while (0)
"""

_PEER_HELPER = r"""
// Lets `device` reach `peer`'s memory directly (over NVLink where there is one); without peer
// access cudaMemcpyPeerAsync still works, staged through the host.
static void enable_peer_access(int device, int peer) {
    int ok = 0;
    CHECK(cudaDeviceCanAccessPeer(&ok, device, peer));
    if (!ok) return;
    CHECK(cudaSetDevice(device));
    cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();  // clear it: a second pipeline run enables nothing new
    } else {
        CHECK(err);
    }
}
"""


def _prelude(collectives: bool, peers: bool) -> str:
    text = cuda._PRELUDE.replace(
        "#include <vector>\n", "#include <vector>\n#include <atomic>\n#include <thread>\n", 1
    )
    # Each device's thread sets the label of the op it issues.
    text = text.replace(
        "static const char* g_op_label", "static thread_local const char* g_op_label"
    )
    if collectives:
        text = text.replace(
            "#include <cuda_runtime.h>\n", "#include <cuda_runtime.h>\n" + _NCCL_PRELUDE
        )
    return text + (_PEER_HELPER if peers else "")


# -- per-op code ----------------------------------------------------------------------------------
def _event(plan: CodePlan, mp: MultiPlan, op: Op, index: int, device: int) -> str:
    return f"{cuda._event(plan, op, index)}[{device}]"


def _wait_mark(mp: MultiPlan, index: int) -> list[str]:
    mark = mp.waits_on_mark.get(index)
    if mark is None:
        return []
    # The record is issued by another device's thread: wait until it has been, as the
    # program's order says it comes first.
    return [f"while (g_marks[{mark}].load() != g_epoch) std::this_thread::yield();"]


def _event_record(plan: CodePlan, mp: MultiPlan, op: Op, index: int) -> list[str]:
    ev = _event(plan, mp, op, index, mp.op_device[index])
    lines = [f"CHECK(cudaEventRecord({ev}, {cuda._stream(plan, op, index)}));"]
    if index in mp.marks:
        lines.append(f"g_marks[{mp.marks[index]}].store(g_epoch);")
    return lines


def _event_wait(plan: CodePlan, mp: MultiPlan, op: Op, index: int) -> list[str]:
    ev = _event(plan, mp, op, index, mp.event_device[index])
    stream = cuda._stream(plan, op, index)
    return [*_wait_mark(mp, index), f"CHECK(cudaStreamWaitEvent({stream}, {ev}, 0));"]


def _event_sync(plan: CodePlan, mp: MultiPlan, op: Op, index: int) -> list[str]:
    ev = _event(plan, mp, op, index, mp.event_device[index])
    return [*_wait_mark(mp, index), f"CHECK(cudaEventSynchronize({ev}));"]


def _peer_copy(plan: CodePlan, mp: MultiPlan, op: Op, index: int) -> list[str]:
    src, dst = mp.peers[index]
    n = checked_int(op.bytes or 1, f"program[{index}].bytes", 1)
    stream = cuda._stream(plan, op, index)
    return [
        f"CHECK(cudaMemcpyPeerAsync(g_dev[{dst}].peer_in, {dst}, g_dev[{src}].peer_out, {src}, "
        f"{n}, {stream}));"
    ]


def _collective(plan: CodePlan, mp: MultiPlan, op: Op, index: int) -> list[str]:
    c = mp.collectives[index]
    comm = f"{mp.comm_ids[c.comm]}[{c.rank}]"
    stream = cuda._stream(plan, op, index)
    call, middle = nccl_call(op.op, c, "ncclFloat", "ncclSum")
    return [f"CHECK_NCCL({call}(coll_send, coll_recv, {middle}, {comm}, {stream}));"]


def _single(kind: str) -> Callable[[CodePlan, MultiPlan, Op, int], list[str]]:
    emit = cuda.EMITTERS[kind]
    return lambda plan, mp, op, index: emit(plan, op, index)


#: The code of every kind in a multi-device program.
EMITTERS: dict[str, Callable[[CodePlan, MultiPlan, Op, int], list[str]]] = {
    **{kind: _single(kind) for kind in cuda.EMITTERS},
    "event_record": _event_record,
    "event_wait": _event_wait,
    "event_sync": _event_sync,
    "peer_copy": _peer_copy,
    **dict.fromkeys(COLLECTIVE_OPS, _collective),
}
register_layer("codegen_cuda", EMITTERS)


# -- the program ----------------------------------------------------------------------------------
def _buffer_names(plan: CodePlan) -> list[str]:
    b = plan.buffers
    return [
        *b.device.values(),
        *plan.d2d_sources.values(),
        *b.pinned.values(),
        *b.pageable.values(),
    ]


def _thread_body(plan: CodePlan, mp: MultiPlan, thread: int) -> tuple[list[str], set[str]]:
    """Host thread ``thread``'s ops as code, and the buffers they use."""
    body = []
    for i, label in thread_label_changes(mp, thread):
        op = plan.pipeline.program[i]
        body.append(f"    // [{i}] {op.op}")
        if label is not None:
            body.append(f"    g_op_label = {cpp_string_literal(label)};")
        body.extend(f"    {line}" for line in EMITTERS[op.op](plan, mp, op, i))
    code = "\n".join(body)
    names = [*_buffer_names(plan), "scratch", "coll_send", "coll_recv"]
    return body, {n for n in names if re.search(rf"\b{n}\b", code)}


def _run_thread(plan: CodePlan, mp: MultiPlan, thread: int) -> tuple[list[str], set[str]]:
    body, used = _thread_body(plan, mp, thread)
    device = mp.thread_device[thread]
    out = [f"static void {mp.run_name(thread)}() {{", f"    CHECK(cudaSetDevice({device}));"]
    out += [f"    unsigned char* {n} = g_dev[{device}].{n};" for n in sorted(used)]
    out += ["    std::vector<void*> allocations;", *body]
    out += [
        "    CHECK(cudaDeviceSynchronize());",
        "    for (void* p : allocations) CHECK(cudaFree(p));",
        '    g_op_label = "";',
        "}",
        "",
    ]
    return out, used


def _used_comms(mp: MultiPlan) -> list[tuple[str, list[int]]]:
    """The communicators some collective uses (declared ones without any need no NCCL)."""
    used = {c.comm for c in mp.collectives.values()}
    return [(mp.comm_ids[c], mp.comm_devices[c]) for c in sorted(used)]


def _declarations(plan: CodePlan, mp: MultiPlan) -> list[str]:
    n = len(mp.devices)
    out = []
    for s in plan.streams:
        ident = plan.stream_ids[s.name]
        if s.kind == "legacy_default":
            out.append(f"static cudaStream_t {ident} = cudaStreamLegacy;  // legacy default stream")
        elif s.kind == "per_thread_default":
            out.append(
                f"static cudaStream_t {ident} = cudaStreamPerThread;  // per-thread default stream"
            )
        else:
            out.append(f"static cudaStream_t {ident};")
    out += [
        f"static cudaEvent_t {ident}[{n}];  // one per device" for ident in plan.event_ids.values()
    ]
    names = [*_buffer_names(plan), "scratch", "coll_send", "coll_recv", "peer_out", "peer_in"]
    out.append("struct DeviceBuffers {")
    out += [f"    unsigned char* {name} = nullptr;" for name in names]
    out += ["};", f"static DeviceBuffers g_dev[{n}];"]
    out += [f"static ncclComm_t {ident}[{len(devs)}];" for ident, devs in _used_comms(mp)]
    out.append(f"static double host_func_us[{max(1, len(plan.pipeline.program))}];")
    out.append("// Set once a record that another device's thread waits for has been issued.")
    out.append(f"static std::atomic<int> g_marks[{max(1, len(mp.marks))}];")
    out.append("static int g_epoch = 0;")
    return out


def _allocations(plan: CodePlan, mp: MultiPlan, device: int, used: set[str]) -> list[str]:
    b, buf = plan.buffers, f"g_dev[{device}]"
    sizes = {name: n for n, name in b.device.items()}
    sizes |= {name: plan.pipeline.program[i].bytes or 1 for i, name in plan.d2d_sources.items()}
    out = [
        f"    CHECK(cudaMalloc(&{buf}.{name}, {n}));  // {format_bytes(n)}"
        for name, n in sizes.items()
        if name in used
    ]
    out.append(f"    CHECK(cudaMalloc(&{buf}.scratch, 1));")
    out += [
        f"    CHECK(cudaMallocHost(&{buf}.{name}, {n}));"
        for n, name in b.pinned.items()
        if name in used
    ]
    for n, name in b.pageable.items():
        if name in used:
            out.append(f"    {buf}.{name} = static_cast<unsigned char*>(std::malloc({n}));")
            out.append(f"    std::memset({buf}.{name}, 1, {n});")
    for name, n in (("coll_send", mp.coll_bytes[device]), ("coll_recv", mp.coll_bytes[device]),
                    ("peer_out", mp.peer_out_bytes[device]), ("peer_in", mp.peer_in_bytes[device])):  # fmt: skip
        if n:
            out.append(f"    CHECK(cudaMalloc(&{buf}.{name}, {n}));  // {format_bytes(n)}")
    return out


def _setup(plan: CodePlan, mp: MultiPlan, used: list[set[str]]) -> list[str]:
    n = len(mp.devices)
    out = [
        "    int found = 0;",
        "    CHECK(cudaGetDeviceCount(&found));",
        f"    if (found < {n}) {{",
        f'        std::fprintf(stderr, "this program needs {n} GPUs, found %d\\n", found);',
        "        return 1;",
        "    }",
        "    CHECK(cudaDeviceGetAttribute(&g_sm_count, cudaDevAttrMultiProcessorCount, 0));",
    ]
    for d in range(n):
        out.append(f"    CHECK(cudaSetDevice({d}));")
        for s in plan.streams:
            if (
                s.kind in ("blocking", "non_blocking")
                and mp.devices.index(plan.pipeline.stream_device(s.name)) == d
            ):
                flags = "cudaStreamNonBlocking" if s.kind == "non_blocking" else "cudaStreamDefault"
                out.append(
                    f"    {plan.stream_ids[s.name]} = make_stream({flags}, {int(s.priority)});"
                )
        for ident in plan.event_ids.values():
            out.append(
                f"    CHECK(cudaEventCreateWithFlags(&{ident}[{d}], cudaEventDisableTiming));"
            )
        out += _allocations(plan, mp, d, used[d])
    for src, dst in mp.peer_pairs:
        out.append(f"    enable_peer_access({src}, {dst});")
        out.append(f"    enable_peer_access({dst}, {src});")
    for ident, devs in _used_comms(mp):
        ranks = ", ".join(str(d) for d in devs)
        out.append(
            f"    {{ const int devices[] = {{{ranks}}}; CHECK_NCCL(ncclCommInitAll({ident}, {len(devs)}, devices)); }}"
        )
    return out


def _teardown(plan: CodePlan, mp: MultiPlan) -> list[str]:
    out = []
    for ident, devs in _used_comms(mp):
        out.append(
            f"    for (int r = 0; r < {len(devs)}; ++r) CHECK_NCCL(ncclCommDestroy({ident}[r]));"
        )
    for d in range(len(mp.devices)):
        out.append(f"    CHECK(cudaSetDevice({d}));")
        for s in plan.streams:
            if (
                s.kind in ("blocking", "non_blocking")
                and mp.devices.index(plan.pipeline.stream_device(s.name)) == d
            ):
                out.append(f"    CHECK(cudaStreamDestroy({plan.stream_ids[s.name]}));")
        out += [f"    CHECK(cudaEventDestroy({ident}[{d}]));" for ident in plan.event_ids.values()]
        buf = f"g_dev[{d}]"
        out.append(
            f"    for (unsigned char* p : {{{', '.join(f'{buf}.{n}' for n in [*plan.buffers.device.values(), *plan.d2d_sources.values(), 'scratch', 'coll_send', 'coll_recv', 'peer_out', 'peer_in'])}}}) CHECK(cudaFree(p));"
        )
        for name in plan.buffers.pinned.values():
            out.append(f"    if ({buf}.{name}) CHECK(cudaFreeHost({buf}.{name}));")
        out += [f"    std::free({buf}.{name});" for name in plan.buffers.pageable.values()]
    return out


def generate_cuda_multi(pipeline: Pipeline, *, repeat: int = 5) -> str:
    """The ``.cu`` program of a multi-device or multi-thread pipeline (printable ASCII only)."""
    plan, mp = make_plan(pipeline), make_multi_plan(pipeline)
    repeat = checked_int(repeat, "repeat", 1, 2**31 - 1)
    n, threads = len(mp.devices), range(len(mp.threads))
    collectives = bool(mp.collectives)
    functions: list[str] = []
    used: list[set[str]] = [set() for _ in range(n)]
    for t in threads:
        lines, names = _run_thread(plan, mp, t)
        functions += lines
        used[mp.thread_device[t]] |= names
    link = " -lnccl" if collectives else ""
    each = (
        f"one std::thread per host thread ({len(threads)})"
        if pipeline.is_multi_thread
        else f"one host thread per device ({n})"
    )
    out = [
        f"// Generated by Swimlanes: the pipeline's CUDA calls, {each}.",
        f"// Build: nvcc -O2 -std=c++17 -o pipeline pipeline.cu{link}",
        _prelude(collectives, bool(mp.peer_pairs)),
        "// The pipeline's name, as a JSON string.",
        f"static const char kPipelineNameJson[] = {cpp_string_literal(json.dumps(pipeline.name))};",
        *_declarations(plan, mp),
        "",
        *functions,
        "static void run_program() {",
        "    ++g_epoch;",
        *[f"    std::thread t{t}({mp.run_name(t)});" for t in threads],
        *[f"    t{t}.join();" for t in threads],
        "}",
        "",
        *cuda.main_function(repeat, _setup(plan, mp, used), _teardown(plan, mp)),
    ]
    return "\n".join(out)
