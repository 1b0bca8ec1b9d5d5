"""Generate a standalone CUDA C++ program that issues the pipeline's CUDA calls.

Build with ``nvcc -O2 -o pipeline pipeline.cu``. Kernels spin on ``%globaltimer`` like the
executor's synthetic kernels; the program prints the median makespan as a JSON line.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from swimlanes.codegen.plan import (
    MAX_GRID_BLOCKS,
    CodegenError,
    CodePlan,
    checked_int,
    cpp_string_literal,
    float_literal,
    label_changes,
    make_plan,
    op_bytes,
    rounded_int,
)
from swimlanes.model.document import Op, Pipeline
from swimlanes.units import format_bytes

_PRELUDE = r"""#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

// The label of the op being issued (set before each labelled op), named in CUDA errors.
static const char* g_op_label = "";

#define CHECK(call)                                                              \
    do {                                                                         \
        cudaError_t err_ = (call);                                               \
        if (err_ != cudaSuccess) {                                               \
            std::fprintf(stderr, "CUDA error %s at line %d%s%s\n",               \
                         cudaGetErrorString(err_), __LINE__,                     \
                         *g_op_label ? " at the op labelled " : "", g_op_label); \
            std::exit(1);                                                        \
        }                                                                        \
    } while (0)

static const int kMaxBlocksPerSm = 32;
static const int kMaxThreadsPerSm = 2048;
static int g_sm_count = 1;

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Each block runs for block_ns: %globaltimer is exact where nanosleep is not.
__global__ void spin_kernel(unsigned long long block_ns) {
    if (threadIdx.x == 0) {
        unsigned long long start = globaltimer();
        while (globaltimer() - start < block_ns) {
        }
    }
    __syncthreads();
}

__global__ void roofline_kernel(long long fmas_per_thread, unsigned char* data, long long nbytes) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    float acc = (float)i;
    for (long long k = 0; k < fmas_per_thread; ++k) acc = acc * 0.999f + 0.001f;
    for (long long j = i; j < nbytes; j += stride) data[j] = (unsigned char)(data[j] + 1);
    if (acc == -1.0f) data[0] = 0;
}

static unsigned long long block_ns_for(unsigned long long duration_ns, int blocks, int threads) {
    int resident = std::max(1, std::min(kMaxBlocksPerSm, kMaxThreadsPerSm / threads));
    long long waves = (blocks + (long long)g_sm_count * resident - 1) / ((long long)g_sm_count * resident);
    return duration_ns / (unsigned long long)waves;
}

static void busy_wait_us(double us) {
    auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds((long long)(us * 1000.0));
    while (std::chrono::steady_clock::now() < end) {
    }
}

static void CUDART_CB host_func(void* arg) { busy_wait_us(*static_cast<double*>(arg)); }

static cudaStream_t make_stream(unsigned int flags, int priority) {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithPriority(&s, flags, priority));
    return s;
}
"""


def _lit(text: str) -> str:
    return cpp_string_literal(text)


def _stream(plan: CodePlan, op: Op, index: int) -> str:
    try:
        return plan.stream_id(op.stream_name)
    except KeyError:
        raise CodegenError(f"program[{index}].stream: no stream {op.stream_name!r}") from None


def _copy(plan: CodePlan, op: Op, index: int) -> str:
    n = op_bytes(plan.pipeline, index)
    dev = plan.buffers.device_buffer(n)
    direction = {"h2d": "cudaMemcpyHostToDevice", "d2h": "cudaMemcpyDeviceToHost"}.get(
        op.op, "cudaMemcpyDeviceToDevice"
    )
    if op.op == "d2d":
        dst, src = dev, plan.d2d_sources[index]
    else:
        host = plan.buffers.host_buffer(n, op.effective_host_memory)
        dst, src = (dev, host) if op.op == "h2d" else (host, dev)
    if op.effective_async:
        stream = _stream(plan, op, index)
        return f"CHECK(cudaMemcpyAsync({dst}, {src}, {n}, {direction}, {stream}));"
    if op.stream is not None:
        # Synchronous on a named stream: async copy there, then wait for that stream.
        stream = _stream(plan, op, index)
        return (
            f"CHECK(cudaMemcpyAsync({dst}, {src}, {n}, {direction}, {stream})); "
            f"CHECK(cudaStreamSynchronize({stream}));"
        )
    return f"CHECK(cudaMemcpy({dst}, {src}, {n}, {direction}));"


def _kernel(plan: CodePlan, op: Op, index: int) -> str:
    where = f"program[{index}]"
    blocks = checked_int(op.blocks or 1, f"{where}.blocks", 1, MAX_GRID_BLOCKS)
    threads = checked_int(op.threads or 1, f"{where}.threads", 1, 1024)
    launch = f"<<<{blocks}, {threads}, 0, {_stream(plan, op, index)}>>>"
    if op.block_us is not None:
        body = f"spin_kernel{launch}({rounded_int(op.block_us * 1000, f'{where}.block_us')}ULL);"
    elif op.duration_us is not None:
        ns = rounded_int(op.duration_us * 1000, f"{where}.duration_us")
        body = f"spin_kernel{launch}(block_ns_for({ns}ULL, {blocks}, {threads}));"
    else:
        fmas = rounded_int((op.flops or 0) // (2 * blocks * threads), f"{where}.flops")
        nbytes = checked_int(op.bytes or 0, f"{where}.bytes")
        data = plan.buffers.device_buffer(nbytes) if nbytes else "scratch"
        body = f"roofline_kernel{launch}({fmas}LL, {data}, {nbytes}LL);"
    return body + " CHECK(cudaGetLastError());"


def _event(plan: CodePlan, op: Op, index: int) -> str:
    try:
        return plan.event_ids[op.event or ""]
    except KeyError:
        raise CodegenError(f"program[{index}].event: missing") from None


def _event_record(plan: CodePlan, op: Op, index: int) -> list[str]:
    return [f"CHECK(cudaEventRecord({_event(plan, op, index)}, {_stream(plan, op, index)}));"]


def _event_wait(plan: CodePlan, op: Op, index: int) -> list[str]:
    ev, stream = _event(plan, op, index), _stream(plan, op, index)
    return [f"CHECK(cudaStreamWaitEvent({stream}, {ev}, 0));"]


def _event_sync(plan: CodePlan, op: Op, index: int) -> list[str]:
    return [f"CHECK(cudaEventSynchronize({_event(plan, op, index)}));"]


def _stream_sync(plan: CodePlan, op: Op, index: int) -> list[str]:
    return [f"CHECK(cudaStreamSynchronize({_stream(plan, op, index)}));"]


def _host(plan: CodePlan, op: Op, index: int) -> list[str]:
    us = float_literal(op.duration_us or 0.0, f"program[{index}].duration_us")
    return [f"busy_wait_us({us});"]


def _host_func(plan: CodePlan, op: Op, index: int) -> list[str]:
    us = float_literal(op.duration_us or 0.0, f"program[{index}].duration_us")
    return [
        f"host_func_us[{index}] = {us};",
        f"CHECK(cudaLaunchHostFunc({_stream(plan, op, index)}, host_func, "
        f"&host_func_us[{index}]));",
    ]


def _malloc(plan: CodePlan, op: Op, index: int) -> list[str]:
    n = op_bytes(plan.pipeline, index)
    return [f"{{ void* p; CHECK(cudaMalloc(&p, {n})); allocations.push_back(p); }}"]


def _free(plan: CodePlan, op: Op, index: int) -> list[str]:
    return [
        "if (!allocations.empty()) { CHECK(cudaFree(allocations.front())); "
        "allocations.erase(allocations.begin()); } else { CHECK(cudaFree(nullptr)); }"
    ]


def _memset(plan: CodePlan, op: Op, index: int) -> list[str]:
    n = op_bytes(plan.pipeline, index)
    dev = plan.buffers.device_buffer(n)
    if op.effective_async:
        return [f"CHECK(cudaMemsetAsync({dev}, 0, {n}, {_stream(plan, op, index)}));"]
    return [f"CHECK(cudaMemset({dev}, 0, {n}));"]


#: The code of each single-device kind (the multi-device kinds are in ``cuda_multi``).
EMITTERS: dict[str, Callable[[CodePlan, Op, int], list[str]]] = {
    "h2d": lambda plan, op, index: [_copy(plan, op, index)],
    "d2h": lambda plan, op, index: [_copy(plan, op, index)],
    "d2d": lambda plan, op, index: [_copy(plan, op, index)],
    "memset": _memset,
    "kernel": lambda plan, op, index: [_kernel(plan, op, index)],
    "event_record": _event_record,
    "event_wait": _event_wait,
    "event_sync": _event_sync,
    "stream_sync": _stream_sync,
    "device_sync": lambda plan, op, index: ["CHECK(cudaDeviceSynchronize());"],
    "host": _host,
    "host_func": _host_func,
    "malloc": _malloc,
    "free": _free,
}


def _op(plan: CodePlan, op: Op, index: int) -> list[str]:
    emit = EMITTERS.get(op.op)
    if emit is None:
        raise CodegenError(f"program[{index}].op: no code for {op.op!r}")
    return emit(plan, op, index)


_STREAM_KIND_NOTES = {
    "legacy_default": "legacy default stream",
    "per_thread_default": "per-thread default stream",
    "blocking": "blocking",
    "non_blocking": "non-blocking",
}


def _declarations(plan: CodePlan) -> list[str]:
    out = []
    for s in plan.streams:
        ident = plan.stream_ids[s.name]
        note = f"  // {_STREAM_KIND_NOTES[s.kind]}" if s.kind in _STREAM_KIND_NOTES else ""
        if s.kind == "legacy_default":
            out.append(f"static cudaStream_t {ident} = cudaStreamLegacy;{note}")
        elif s.kind == "per_thread_default":
            out.append(f"static cudaStream_t {ident} = cudaStreamPerThread;{note}")
        else:
            out.append(f"static cudaStream_t {ident};{note}")
    out += [f"static cudaEvent_t {ident};" for ident in plan.event_ids.values()]
    buffers = plan.buffers
    names = [*buffers.device.values(), *plan.d2d_sources.values(), "scratch"]
    names += [*buffers.pinned.values(), *buffers.pageable.values()]
    out += [f"static unsigned char* {name} = nullptr;" for name in names]
    out.append(f"static double host_func_us[{max(1, len(plan.pipeline.program))}];")
    out.append("static std::vector<void*> allocations;")
    return out


def _setup(plan: CodePlan) -> list[str]:
    out = ["    CHECK(cudaDeviceGetAttribute(&g_sm_count, cudaDevAttrMultiProcessorCount, 0));"]
    for s in plan.streams:
        if s.kind in ("blocking", "non_blocking"):
            flags = "cudaStreamNonBlocking" if s.kind == "non_blocking" else "cudaStreamDefault"
            out.append(f"    {plan.stream_ids[s.name]} = make_stream({flags}, {int(s.priority)});")
    for ident in plan.event_ids.values():
        out.append(f"    CHECK(cudaEventCreateWithFlags(&{ident}, cudaEventDisableTiming));")
    b = plan.buffers
    for n, name in b.device.items():
        out.append(f"    CHECK(cudaMalloc(&{name}, {n}));  // {format_bytes(n)}")
    for i, name in plan.d2d_sources.items():
        out.append(f"    CHECK(cudaMalloc(&{name}, {op_bytes(plan.pipeline, i)}));")
    out.append("    CHECK(cudaMalloc(&scratch, 1));")
    for n, name in b.pinned.items():
        out.append(f"    CHECK(cudaMallocHost(&{name}, {n}));")
    for n, name in b.pageable.items():
        out.append(f"    {name} = static_cast<unsigned char*>(std::malloc({n}));")
        out.append(f"    std::memset({name}, 1, {n});")
    return out


def _teardown(plan: CodePlan) -> list[str]:
    out = []
    for s in plan.streams:
        if s.kind in ("blocking", "non_blocking"):
            out.append(f"    CHECK(cudaStreamDestroy({plan.stream_ids[s.name]}));")
    out += [f"    CHECK(cudaEventDestroy({i}));" for i in plan.event_ids.values()]
    b = plan.buffers
    out += [f"    CHECK(cudaFree({n}));" for n in [*b.device.values(), *plan.d2d_sources.values()]]
    out.append("    CHECK(cudaFree(scratch));")
    out += [f"    CHECK(cudaFreeHost({n}));" for n in b.pinned.values()]
    out += [f"    std::free({n});" for n in b.pageable.values()]
    return out


def generate_cuda(pipeline: Pipeline, *, repeat: int = 5) -> str:
    """The whole ``.cu`` program as text (printable ASCII only). Raises :class:`CodegenError`
    for a number the program cannot hold."""
    plan = make_plan(pipeline)
    repeat = checked_int(repeat, "repeat", 1, 2**31 - 1)
    out = [
        "// Generated by Swimlanes: the pipeline's CUDA calls in program order.",
        "// Build: nvcc -O2 -o pipeline pipeline.cu",
        _PRELUDE,
        "// The pipeline's name, as a JSON string.",
        f"static const char kPipelineNameJson[] = {_lit(json.dumps(pipeline.name))};",
        *_declarations(plan),
        "",
        "static void run_program() {",
    ]
    labels = label_changes(pipeline)
    for i, op in enumerate(pipeline.program):
        out.append(f"    // [{i}] {op.op}")
        if (label := labels[i]) is not None:
            out.append(f"    g_op_label = {_lit(label)};")
        out.extend(f"    {line}" for line in _op(plan, op, i))
    out += [
        "    CHECK(cudaDeviceSynchronize());",
        "    for (void* p : allocations) CHECK(cudaFree(p));",
        "    allocations.clear();",
        '    g_op_label = "";',
        "}",
        "",
        *main_function(repeat, _setup(plan), _teardown(plan)),
    ]
    return "\n".join(out)


def main_function(repeat: int, setup: list[str], teardown: list[str]) -> list[str]:
    """``main()``: the set-up, a warm-up ``run_program()``, then ``repeat`` (or argv[1]) timed
    runs, printing the median makespan as JSON, and the teardown."""
    return [
        "int main(int argc, char** argv) {",
        f"    int repeat = argc > 1 ? std::atoi(argv[1]) : {repeat};",
        "    if (repeat < 1) repeat = 1;",
        *setup,
        "    run_program();  // warm-up",
        "    std::vector<double> makespans;",
        "    for (int r = 0; r < repeat; ++r) {",
        "        auto t0 = std::chrono::steady_clock::now();",
        "        run_program();",
        "        auto t1 = std::chrono::steady_clock::now();",
        "        makespans.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());",
        "    }",
        "    std::sort(makespans.begin(), makespans.end());",
        '    std::printf("{\\"pipeline\\": %s, \\"makespan_us\\": %.3f}\\n", kPipelineNameJson,',
        "                makespans[makespans.size() / 2]);",
        *teardown,
        "    return 0;",
        "}",
        "",
    ]
