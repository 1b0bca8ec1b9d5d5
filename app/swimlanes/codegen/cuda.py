"""Generate a standalone CUDA C++ program that issues the pipeline's CUDA calls.

Build with ``nvcc -O2 -o pipeline pipeline.cu``. Kernels spin on ``%globaltimer`` like the
executor's synthetic kernels; the program prints the median makespan as a JSON line.
"""

from __future__ import annotations

from swimlanes.codegen.plan import CodePlan, comment_text, make_plan
from swimlanes.model.document import Op, Pipeline
from swimlanes.units import format_bytes

_PRELUDE = r"""#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        cudaError_t err_ = (call);                                               \
        if (err_ != cudaSuccess) {                                               \
            std::fprintf(stderr, "CUDA error %s at line %d\n",                   \
                         cudaGetErrorString(err_), __LINE__);                    \
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


def _stream(plan: CodePlan, op: Op) -> str:
    return plan.stream_id(op.stream_name)


def _copy(plan: CodePlan, op: Op, index: int) -> str:
    n = int(op.bytes or 1)
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
        return f"CHECK(cudaMemcpyAsync({dst}, {src}, {n}, {direction}, {_stream(plan, op)}));"
    if op.stream is not None:
        # Synchronous on a named stream: async copy there, then wait for that stream.
        stream = _stream(plan, op)
        return (
            f"CHECK(cudaMemcpyAsync({dst}, {src}, {n}, {direction}, {stream})); "
            f"CHECK(cudaStreamSynchronize({stream}));"
        )
    return f"CHECK(cudaMemcpy({dst}, {src}, {n}, {direction}));"


def _kernel(plan: CodePlan, op: Op) -> str:
    blocks, threads = int(op.blocks or 1), int(op.threads or 1)
    launch = f"<<<{blocks}, {threads}, 0, {_stream(plan, op)}>>>"
    if op.block_us is not None:
        body = f"spin_kernel{launch}({int(round(op.block_us * 1000))}ULL);"
    elif op.duration_us is not None:
        ns = int(round(op.duration_us * 1000))
        body = f"spin_kernel{launch}(block_ns_for({ns}ULL, {blocks}, {threads}));"
    else:
        fmas = int((op.flops or 0) // (2 * blocks * threads))
        nbytes = int(op.bytes or 0)
        data = plan.buffers.device_buffer(nbytes) if nbytes else "scratch"
        body = f"roofline_kernel{launch}({fmas}LL, {data}, {nbytes}LL);"
    return body + " CHECK(cudaGetLastError());"


def _op(plan: CodePlan, op: Op, index: int) -> list[str]:
    kind = op.op
    if kind in ("h2d", "d2h", "d2d"):
        return [_copy(plan, op, index)]
    if kind == "kernel":
        return [_kernel(plan, op)]
    ev = plan.event_ids.get(op.event or "", "")
    n = int(op.bytes or 1)
    if kind == "memset":
        dev = plan.buffers.device_buffer(n)
        if op.effective_async:
            return [f"CHECK(cudaMemsetAsync({dev}, 0, {n}, {_stream(plan, op)}));"]
        return [f"CHECK(cudaMemset({dev}, 0, {n}));"]
    if kind == "host_func":
        return [
            f"host_func_us[{index}] = {float(op.duration_us or 0.0)!r};",
            f"CHECK(cudaLaunchHostFunc({_stream(plan, op)}, host_func, &host_func_us[{index}]));",
        ]
    lines = {
        "event_record": f"CHECK(cudaEventRecord({ev}, {_stream(plan, op)}));",
        "event_wait": f"CHECK(cudaStreamWaitEvent({_stream(plan, op)}, {ev}, 0));",
        "event_sync": f"CHECK(cudaEventSynchronize({ev}));",
        "stream_sync": f"CHECK(cudaStreamSynchronize({_stream(plan, op)}));",
        "device_sync": "CHECK(cudaDeviceSynchronize());",
        "host": f"busy_wait_us({float(op.duration_us or 0.0)!r});",
        "malloc": f"{{ void* p; CHECK(cudaMalloc(&p, {n})); allocations.push_back(p); }}",
        "free": "if (!allocations.empty()) { CHECK(cudaFree(allocations.front())); "
        "allocations.erase(allocations.begin()); } else { CHECK(cudaFree(nullptr)); }",
    }
    return [lines[kind]]


def _declarations(plan: CodePlan) -> list[str]:
    out = []
    for s in plan.streams:
        ident = plan.stream_ids[s.name]
        note = f"  // {comment_text(s.name)} ({s.kind})"
        if s.kind == "legacy_default":
            out.append(f"static cudaStream_t {ident} = cudaStreamLegacy;{note}")
        elif s.kind == "per_thread_default":
            out.append(f"static cudaStream_t {ident} = cudaStreamPerThread;{note}")
        else:
            out.append(f"static cudaStream_t {ident};{note}")
    out += [
        f"static cudaEvent_t {ident};  // {comment_text(ev)}"
        for ev, ident in plan.event_ids.items()
    ]
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
        out.append(f"    CHECK(cudaMalloc(&{name}, {int(plan.pipeline.program[i].bytes or 1)}));")
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
    """The whole ``.cu`` program as text."""
    plan = make_plan(pipeline)
    out = [
        f"// Generated by Swimlanes from the pipeline: {comment_text(pipeline.name)}",
        "// Build: nvcc -O2 -o pipeline pipeline.cu",
        _PRELUDE,
        *_declarations(plan),
        "",
        "static void run_program() {",
    ]
    for i, op in enumerate(pipeline.program):
        out.append(f"    // [{i}] {op.op} {comment_text(op.label or '')}".rstrip())
        out.extend(f"    {line}" for line in _op(plan, op, i))
    out += [
        "    CHECK(cudaDeviceSynchronize());",
        "    for (void* p : allocations) CHECK(cudaFree(p));",
        "    allocations.clear();",
        "}",
        "",
        "int main(int argc, char** argv) {",
        f"    int repeat = argc > 1 ? std::atoi(argv[1]) : {int(repeat)};",
        "    if (repeat < 1) repeat = 1;",
        *_setup(plan),
        "    run_program();  // warm-up",
        "    std::vector<double> makespans;",
        "    for (int r = 0; r < repeat; ++r) {",
        "        auto t0 = std::chrono::steady_clock::now();",
        "        run_program();",
        "        auto t1 = std::chrono::steady_clock::now();",
        "        makespans.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());",
        "    }",
        "    std::sort(makespans.begin(), makespans.end());",
        '    std::printf("{\\"makespan_us\\": %.3f}\\n", makespans[makespans.size() / 2]);',
        *_teardown(plan),
        "    return 0;",
        "}",
        "",
    ]
    return "\n".join(out)
