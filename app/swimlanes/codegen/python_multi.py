"""The Numba CUDA script of a multi-device or multi-thread pipeline: one threading.Thread per
host thread (per device where the pipeline declares none), peer copies and NCCL collectives.

Each host thread enters its device (``with cuda.gpus[d]:``) and issues its own ops in program
order; a per-thread default stream is ``cuda.per_thread_default_stream()``, the calling
thread's own stream, used only by its owning thread. Peer copies are the driver's cuMemcpyPeerAsync (cudaMemcpyPeerAsync) between the
devices' primary contexts, with peer access enabled between the pairs they join. Collectives
call the NCCL library through ctypes, as Swimlanes' executor does (``swimlanes.gpu.nccl``): the
script finds ``libnccl.so`` where the nvidia-nccl wheels put it, or on the loader's path. It needs numba-cuda, cuda-bindings and, for collectives, NCCL; not
Swimlanes. Numba's CUDA simulator cannot run it (it calls the driver and NCCL directly).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from swimlanes.codegen import python
from swimlanes.codegen.multi import MultiPlan, make_multi_plan, nccl_call, thread_label_changes
from swimlanes.codegen.plan import CodePlan, checked_int, make_plan, python_string_literal
from swimlanes.model.document import COLLECTIVE_OPS, Op, Pipeline
from swimlanes.model.op_kinds import register_layer
from swimlanes.units import format_bytes

_MULTI_PRELUDE = '''
import ctypes
import ctypes.util
import pathlib
import threading


class Issuing(threading.local):
    """The label of the op each host thread is issuing, named in its CUDA and NCCL errors."""

    op_label = ""


issuing = Issuing()


def issued_label():
    return issuing.op_label


def primary_context(ordinal):
    return check(driver.cuDevicePrimaryCtxRetain(check(driver.cuDeviceGet(ordinal))))


def enable_peer_access(device, peer, contexts):
    """Lets `device` reach `peer`'s memory directly (over NVLink where there is one); without
    it cuMemcpyPeerAsync still works, staged through the host."""
    ok = check(driver.cuDeviceCanAccessPeer(check(driver.cuDeviceGet(device)),
                                            check(driver.cuDeviceGet(peer))))
    if not ok:
        return
    with cuda.gpus[device]:
        err = driver.cuCtxEnablePeerAccess(contexts[peer], 0)[0]
        if int(err) != 704:  # CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: a second run
            check(err)
'''

_NCCL_PRELUDE = """
# NCCL through ctypes: ncclDataType_t ncclFloat (fp32) and ncclRedOp_t ncclSum, from nccl.h.
NCCL_FLOAT = 7
NCCL_SUM = 0


def load_nccl():
    # NCCL from the nvidia-nccl wheels on sys.path, else from the loader's search path.
    names = []
    for root in sys.path:
        for sub in ("nvidia/nccl/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"):
            names += sorted(str(p) for p in pathlib.Path(root or ".").glob(sub + "/libnccl.so*"))
    names += [ctypes.util.find_library("nccl") or "", "libnccl.so.2", "libnccl.so"]
    for name in [n for n in names if n]:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        vp, c_int, c_size = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
        lib.ncclCommInitAll.argtypes = [ctypes.POINTER(vp), c_int, ctypes.POINTER(c_int)]
        lib.ncclAllReduce.argtypes = [vp, vp, c_size, c_int, c_int, vp, vp]
        lib.ncclReduceScatter.argtypes = [vp, vp, c_size, c_int, c_int, vp, vp]
        lib.ncclBroadcast.argtypes = [vp, vp, c_size, c_int, c_int, vp, vp]
        lib.ncclAllGather.argtypes = [vp, vp, c_size, c_int, vp, vp]
        lib.ncclCommDestroy.argtypes = [vp]
        lib.ncclGetErrorString.argtypes, lib.ncclGetErrorString.restype = [c_int], ctypes.c_char_p
        return lib
    raise RuntimeError("NCCL not found: install nvidia-nccl-cu13 (or cu12), or a system NCCL")


nccl = None


def check_nccl(result):
    if result != 0:
        label = issued_label()
        where = f" at the op labelled {label!r}" if label else ""
        raise RuntimeError(f"NCCL error {nccl.ncclGetErrorString(result).decode()}{where}")


def nccl_init_all(ordinals):
    comms = (ctypes.c_void_p * len(ordinals))()
    devices = (ctypes.c_int * len(ordinals))(*ordinals)
    check_nccl(nccl.ncclCommInitAll(comms, len(ordinals), devices))
    return [int(c or 0) for c in comms]
"""

_RUN_PROGRAM = '''

def run_program(g):
    """Issues every device's ops from its own thread, all at once; returns when all are done."""
    g.marks = [threading.Event() for _ in range(MARKS)]
    errors = []

    def on_device(ordinal, run_device):
        try:
            with cuda.gpus[ordinal]:
                run_device(g)
        except BaseException as err:  # report it from the main thread, and free the waiters
            errors.append(err)
            for mark in g.marks:
                mark.set()

    threads = [threading.Thread(target=on_device, args=(d, fn)) for d, fn in {run_list}]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
'''


def _lit(text: str) -> str:
    return python_string_literal(text)


# -- per-op code ----------------------------------------------------------------------------------
def _event(plan: CodePlan, op: Op, index: int, device: int) -> str:
    ident = plan.event_ids.get(op.event or "")
    if ident is None:
        return python._event(plan, op, index)  # raises the single-device generator's error
    return f"events[({_lit(ident)}, {device})]"


def _wait_mark(mp: MultiPlan, index: int) -> list[str]:
    mark = mp.waits_on_mark.get(index)
    # The record is issued by another device's thread: wait until it has been, as the
    # program's order says it comes first.
    return [] if mark is None else [f"g.marks[{mark}].wait()"]


def _event_record(plan: CodePlan, mp: MultiPlan, op: Op, index: int) -> list[str]:
    ev = _event(plan, op, index, mp.op_device[index])
    lines = [f"{ev}.record({python._stream(plan, op, index)})"]
    if index in mp.marks:
        lines.append(f"g.marks[{mp.marks[index]}].set()")
    return lines


def _event_wait(plan: CodePlan, mp: MultiPlan, op: Op, index: int) -> list[str]:
    ev = _event(plan, op, index, mp.event_device[index])
    return [*_wait_mark(mp, index), f"{ev}.wait({python._stream(plan, op, index)})"]


def _event_sync(plan: CodePlan, mp: MultiPlan, op: Op, index: int) -> list[str]:
    ev = _event(plan, op, index, mp.event_device[index])
    return [*_wait_mark(mp, index), f"{ev}.synchronize()"]


def _peer_copy(plan: CodePlan, mp: MultiPlan, op: Op, index: int) -> list[str]:
    src, dst = mp.peers[index]
    n = checked_int(op.bytes or 1, f"program[{index}].bytes", 1)
    handle = python._handle(plan, op, index)
    return [
        f"check(driver.cuMemcpyPeerAsync(g.ptrs[{dst}].peer_in, g.contexts[{dst}], "
        f"g.ptrs[{src}].peer_out, g.contexts[{src}], {n}, {handle}))"
    ]


def _collective(plan: CodePlan, mp: MultiPlan, op: Op, index: int) -> list[str]:
    c = mp.collectives[index]
    comm = f"g.comms[{_lit(mp.comm_ids[c.comm])}][{c.rank}]"
    stream = f"int({python._handle(plan, op, index)})"
    call, args = nccl_call(op.op, c, "NCCL_FLOAT", "NCCL_SUM")
    buffers = "int(p.coll_send), int(p.coll_recv)"
    return [f"check_nccl(nccl.{call}({buffers}, {args}, {comm}, {stream}))"]


def _single(kind: str) -> Callable[[CodePlan, MultiPlan, Op, int], list[str]]:
    emit = python.EMITTERS[kind]
    return lambda plan, mp, op, index: emit(plan, op, index)


#: The code of every kind in a multi-device script.
EMITTERS: dict[str, Callable[[CodePlan, MultiPlan, Op, int], list[str]]] = {
    **{kind: _single(kind) for kind in python.EMITTERS},
    "event_record": _event_record,
    "event_wait": _event_wait,
    "event_sync": _event_sync,
    "peer_copy": _peer_copy,
    **dict.fromkeys(COLLECTIVE_OPS, _collective),
}
register_layer("codegen_python", EMITTERS)


# -- the script -----------------------------------------------------------------------------------
def _run_thread(plan: CodePlan, mp: MultiPlan, thread: int) -> list[str]:
    device = mp.thread_device[thread]
    out = [
        f"def {mp.run_name(thread)}(g):",
        f"    streams, handles, events, b, p = g.streams, g.handles, g.events, g.bufs[{device}], "
        f"g.ptrs[{device}]",
        "    allocations = []",
    ]
    for i, label in thread_label_changes(mp, thread):
        op = plan.pipeline.program[i]
        out.append(f"    # [{i}] {op.op}")
        if label is not None:
            out.append(f"    issuing.op_label = {_lit(label)}")
        out.extend(f"    {line}" for line in EMITTERS[op.op](plan, mp, op, i))
    out += [
        "    cuda.synchronize()",
        "    for ptr in allocations:",
        "        check(driver.cuMemFree(ptr))",
        "    issuing.op_label = ''",
        "",
        "",
    ]
    return out


def _device_setup(plan: CodePlan, mp: MultiPlan, device: int, body: str) -> list[str]:
    """Device ``device``'s streams, events and the buffers its ops use (names found in its
    code), made in its context."""
    pipeline = plan.pipeline
    out = [f"    with cuda.gpus[{device}]:", "        b = types.SimpleNamespace()"]
    for s in plan.streams:
        if mp.devices.index(pipeline.stream_device(s.name)) == device:
            ident, kind = _lit(plan.stream_ids[s.name]), _lit(s.kind)
            out.append(f"        g.streams[{ident}] = make_stream({kind}, {int(s.priority)})")
    for ident in plan.event_ids.values():
        out.append(f"        g.events[({_lit(ident)}, {device})] = cuda.event(timing=False)")
    buffers = plan.buffers
    sized = [(name, n, "device") for n, name in buffers.device.items()]
    sized += [
        (name, pipeline.program[i].bytes or 1, "device") for i, name in plan.d2d_sources.items()
    ]
    sized += [(name, n, "pinned") for n, name in buffers.pinned.items()]
    sized += [(name, n, "pageable") for n, name in buffers.pageable.items()]
    make = {"device": "cuda.device_array", "pinned": "cuda.pinned_array", "pageable": "np.ones"}
    for name, n, memory in sized:
        if re.search(rf"\b[bp]\.{name}\b", body):
            out.append(
                f"        b.{name} = {make[memory]}({n}, dtype=np.uint8)  # {format_bytes(n)}"
            )
    out.append("        b.scratch = cuda.device_array(1, dtype=np.uint8)")
    for name, n in (("coll_send", mp.coll_bytes[device]), ("coll_recv", mp.coll_bytes[device]),
                    ("peer_out", mp.peer_out_bytes[device]), ("peer_in", mp.peer_in_bytes[device])):  # fmt: skip
        if n:
            out.append(
                f"        b.{name} = cuda.device_array({n}, dtype=np.uint8)  # {format_bytes(n)}"
            )
    out += [
        "        g.bufs.append(b)",
        "        g.ptrs.append(types.SimpleNamespace(**{k: pointer(v) for k, v in vars(b).items()}))",
    ]
    return out


def _setup(plan: CodePlan, mp: MultiPlan, threads: list[list[str]]) -> list[str]:
    n = len(mp.devices)
    out = [
        "    global sm_count, nccl",
        f"    if len(cuda.gpus) < {n}:",
        f"        raise SystemExit(f'this script needs {n} GPUs, found {{len(cuda.gpus)}}')",
        "    with cuda.gpus[0]:",
        "        sm_count = cuda.get_current_device().MULTIPROCESSOR_COUNT",
        "    g = types.SimpleNamespace(streams={}, events={}, bufs=[], ptrs=[], comms={})",
        f"    g.contexts = [primary_context(d) for d in range({n})]",
    ]
    for d in range(n):
        body = "\n".join(line for t in mp.threads_of(d) for line in threads[t])
        out += _device_setup(plan, mp, d, body)
    out.append("    # Raw stream handles: the driver calls take these, like CUDA C does.")
    out.append("    g.handles = {k: driver.CUstream(int(s)) for k, s in g.streams.items()}")
    for src, dst in mp.peer_pairs:
        out.append(f"    enable_peer_access({src}, {dst}, g.contexts)")
        out.append(f"    enable_peer_access({dst}, {src}, g.contexts)")
    used = sorted({c.comm for c in mp.collectives.values()})
    if used:
        out.append("    nccl = load_nccl()")
    for c in used:
        ranks = ", ".join(str(d) for d in mp.comm_devices[c])
        out.append(f"    g.comms[{_lit(mp.comm_ids[c])}] = nccl_init_all([{ranks}])")
    return out


def _run_list(mp: MultiPlan) -> str:
    """The functions the threads run: by device (``RUN_DEVICE``, the device is the index) where
    each device has one thread, else ``RUN_THREAD``, each with its device."""
    if not mp.pipeline.is_multi_thread:
        return f"RUN_DEVICE = [{', '.join(mp.run_name(d) for d in range(len(mp.threads)))}]"
    pairs = ", ".join(f"({d}, {mp.run_name(t)})" for t, d in enumerate(mp.thread_device))
    return f"RUN_THREAD = [{pairs}]"


def _run_program(multi_thread: bool) -> str:
    if not multi_thread:
        return _RUN_PROGRAM.replace("{run_list}", "enumerate(RUN_DEVICE)")
    text = _RUN_PROGRAM.replace("{run_list}", "RUN_THREAD")
    return text.replace("every device's ops from its own", "every host thread's ops from a")


def generate_python_multi(pipeline: Pipeline, *, repeat: int = 5) -> str:
    """The script of a multi-device or multi-thread pipeline (printable ASCII only)."""
    plan, mp = make_plan(pipeline), make_multi_plan(pipeline)
    repeat = checked_int(repeat, "repeat", 1)
    multi_thread = pipeline.is_multi_thread
    threads = [_run_thread(plan, mp, t) for t in range(len(mp.threads))]
    teardown = [
        f"    for comm in g.comms[{_lit(mp.comm_ids[c])}]:\n        check_nccl(nccl.ncclCommDestroy(comm))"
        for c in sorted({c.comm for c in mp.collectives.values()})
    ]
    out = [
        # Fixed text only in the first two lines: Python reads an encoding from a comment there.
        "#!/usr/bin/env python3",
        "# Generated by Swimlanes: the pipeline's CUDA calls, "
        + ("one Python thread per host thread." if multi_thread else "one host thread per device."),
        "# It prints the makespan. Names and labels from the pipeline are in string literals.",
        python._PRELUDE + _MULTI_PRELUDE + (_NCCL_PRELUDE if mp.collectives else ""),
        "",
        f"PIPELINE_NAME = {_lit(pipeline.name)}",
        f"MARKS = {len(mp.marks)}",
        "",
        "",
        *[line for lines in threads for line in lines],
        _run_list(mp),
        _run_program(multi_thread),
        "",
        f"def main(repeat={repeat}):",
        *_setup(plan, mp, threads),
        *python.timed_runs("run_program(g)", "compiles kernels on every device", teardown),
        *python.script_end(repeat),
    ]
    return "\n".join(out)
