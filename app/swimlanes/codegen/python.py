"""Generate a standalone Numba CUDA script that issues the pipeline's CUDA calls.

The script needs numba-cuda and cuda-bindings, not Swimlanes. Kernels spin on ``%globaltimer``
like the executor's synthetic kernels, so its makespan is comparable with ``swimlanes run``.
"""

from __future__ import annotations

from swimlanes.codegen.plan import CodePlan, comment_text, make_plan
from swimlanes.model.document import Op, Pipeline
from swimlanes.units import format_bytes

_PRELUDE = '''\
import json
import math
import statistics
import sys
import time
import types

import numpy as np
from cuda.bindings import driver
from numba import cuda, float32, uint8, uint64
from numba.cuda import CUSource, declare_device

# %globaltimer is a nanosecond clock readable from device code: a block spins on it to run for
# an exact time (nanosleep is only approximate).
_TIMER = CUSource("""
extern "C" __device__ unsigned long long swl_globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
""")
globaltimer = declare_device("swl_globaltimer", "uint64()", link=_TIMER, abi="c")

MAX_BLOCKS_PER_SM = 32
MAX_THREADS_PER_SM = 2048


@cuda.jit
def spin_kernel(block_ns):
    if cuda.threadIdx.x == 0:
        start = globaltimer()
        while globaltimer() - start < block_ns:
            pass
    cuda.syncthreads()


@cuda.jit
def roofline_kernel(fmas_per_thread, data, nbytes):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    acc = float32(i)
    for _ in range(fmas_per_thread):
        acc = acc * float32(0.999) + float32(0.001)
    j = i
    while j < nbytes:
        data[j] = uint8(data[j] + 1)
        j += stride
    if acc == float32(-1.0):
        data[0] = uint8(0)


def check(result):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver error {err}")
    return result[1] if isinstance(result, tuple) and len(result) > 1 else None


def make_stream(kind, priority):
    if kind == "legacy_default":
        return cuda.legacy_default_stream()
    if kind == "per_thread_default":
        return cuda.per_thread_default_stream()
    flags = 1 if kind == "non_blocking" else 0  # CU_STREAM_NON_BLOCKING
    handle = check(driver.cuStreamCreateWithPriority(flags, priority))
    return cuda.external_stream(int(handle))


def block_ns_for(duration_ns, blocks, threads, sm_count):
    resident = max(1, min(MAX_BLOCKS_PER_SM, MAX_THREADS_PER_SM // threads))
    waves = math.ceil(blocks / (sm_count * resident))
    return duration_ns // waves


def pointer(array):
    """The address of a host (numpy, pinned) or device array, as the driver API wants it."""
    if cuda.is_cuda_array(array):
        return driver.CUdeviceptr(array.__cuda_array_interface__["data"][0])
    return array.ctypes.data


def busy_wait_us(us):
    end = time.perf_counter_ns() + int(us * 1000)
    while time.perf_counter_ns() < end:
        pass


def host_func(us):
    def callback(stream, status, arg):
        busy_wait_us(us)
    return callback
'''


def _stream(plan: CodePlan, op: Op) -> str:
    return f"streams[{plan.stream_id(op.stream_name)!r}]"


def _copy_line(plan: CodePlan, op: Op, index: int) -> list[str]:
    n = int(op.bytes or 1)
    dev = f"p.{plan.buffers.device_buffer(n)}"
    if op.op == "d2d":
        dst, src, call = dev, f"p.{plan.d2d_sources[index]}", "cuMemcpyDtoD"
    else:
        host = f"p.{plan.buffers.host_buffer(n, op.effective_host_memory)}"
        h2d = op.op == "h2d"
        dst, src = (dev, host) if h2d else (host, dev)
        call = "cuMemcpyHtoD" if h2d else "cuMemcpyDtoH"
    # A synchronous copy with no stream is cudaMemcpy (legacy default stream); on a named stream
    # it is an async copy on that stream followed by a stream sync, as frameworks issue it.
    if not op.effective_async and op.stream is None:
        return [f"check(driver.{call}({dst}, {src}, {n}))"]
    handle = f"handles[{plan.stream_id(op.stream_name)!r}]"
    lines = [f"check(driver.{call}Async({dst}, {src}, {n}, {handle}))"]
    if not op.effective_async:
        lines.append(f"check(driver.cuStreamSynchronize({handle}))")
    return lines


def _kernel_line(plan: CodePlan, op: Op) -> list[str]:
    launch = f"[{int(op.blocks or 1)}, {int(op.threads or 1)}, {_stream(plan, op)}]"
    if op.block_us is not None:
        return [f"spin_kernel{launch}({int(round(op.block_us * 1000))})"]
    if op.duration_us is not None:
        ns = int(round(op.duration_us * 1000))
        return [
            f"spin_kernel{launch}(block_ns_for({ns}, {int(op.blocks or 1)}, "
            f"{int(op.threads or 1)}, sm_count))"
        ]
    threads = int(op.blocks or 1) * int(op.threads or 1)
    fmas = int((op.flops or 0) // (2 * threads))
    nbytes = int(op.bytes or 0)
    data = "b." + (plan.buffers.device_buffer(nbytes) if nbytes else "scratch")
    return [f"roofline_kernel{launch}({fmas}, {data}, {nbytes})"]


def _op_lines(plan: CodePlan, op: Op, index: int) -> list[str]:
    kind = op.op
    if kind in ("h2d", "d2h", "d2d"):
        return _copy_line(plan, op, index)
    if kind == "kernel":
        return _kernel_line(plan, op)
    stream = _stream(plan, op) if op.stream_name else ""
    event = f"events[{plan.event_ids[op.event]!r}]" if op.event else ""
    simple = {
        "event_record": f"{event}.record({stream})",
        "event_wait": f"{event}.wait({stream})",
        "event_sync": f"{event}.synchronize()",
        "stream_sync": f"{stream}.synchronize()",
        "device_sync": "cuda.synchronize()",
        "host": f"busy_wait_us({float(op.duration_us or 0.0)!r})",
        "host_func": f"{stream}.add_callback(host_func({float(op.duration_us or 0.0)!r}))",
        "malloc": f"allocations.append(check(driver.cuMemAlloc({int(op.bytes or 1)})))",
        # cudaFree synchronises the device; with nothing allocated, synchronise like it would.
        "free": "check(driver.cuMemFree(allocations.pop(0))) if allocations else "
        "cuda.synchronize()",
    }
    if kind == "memset":
        ptr = f"p.{plan.buffers.device_buffer(op.bytes or 1)}"
        if op.effective_async:
            handle = f"handles[{plan.stream_id(op.stream_name)!r}]"
            return [f"check(driver.cuMemsetD8Async({ptr}, 0, {int(op.bytes or 1)}, {handle}))"]
        return [f"check(driver.cuMemsetD8({ptr}, 0, {int(op.bytes or 1)}))"]
    return [simple[kind]]


def _setup_lines(plan: CodePlan) -> list[str]:
    lines = ["    b = types.SimpleNamespace()", "    streams = {"]
    for s in plan.streams:
        lines.append(
            f"        {plan.stream_ids[s.name]!r}: make_stream({s.kind!r}, {int(s.priority)}),"
            f"  # {comment_text(s.name)}"
        )
    lines.append("    }")
    lines.append("    events = {")
    for ev, ident in plan.event_ids.items():
        lines.append(f"        {ident!r}: cuda.event(timing=False),  # {comment_text(ev)}")
    lines.append("    }")
    for n, name in plan.buffers.device.items():
        lines.append(f"    b.{name} = cuda.device_array({n}, dtype=np.uint8)  # {format_bytes(n)}")
    for n, name in plan.buffers.pinned.items():
        lines.append(f"    b.{name} = cuda.pinned_array({n}, dtype=np.uint8)")
    for n, name in plan.buffers.pageable.items():
        lines.append(f"    b.{name} = np.ones({n}, dtype=np.uint8)")
    for i, name in plan.d2d_sources.items():
        lines.append(
            f"    b.{name} = cuda.device_array({int(plan.pipeline.program[i].bytes or 1)}, "
            "dtype=np.uint8)"
        )
    lines.append("    b.scratch = cuda.device_array(1, dtype=np.uint8)")
    lines.append(
        "    # Raw pointers and stream handles: the driver calls take these, like CUDA C does."
    )
    lines.append("    handles = {k: driver.CUstream(int(s)) for k, s in streams.items()}")
    lines.append("    p = types.SimpleNamespace(**{k: pointer(v) for k, v in vars(b).items()})")
    return lines


def generate_python(pipeline: Pipeline, *, repeat: int = 5) -> str:
    """The whole script as text."""
    plan = make_plan(pipeline)
    out = [
        "#!/usr/bin/env python3",
        f"# Generated by Swimlanes from the pipeline: {comment_text(pipeline.name)}",
        "# Issues the same CUDA calls in the same order with Numba CUDA and prints the makespan.",
        _PRELUDE,
        "",
        "def run_program(streams, handles, events, b, p):",
        "    allocations = []",
    ]
    for i, op in enumerate(pipeline.program):
        out.append(f"    # [{i}] {op.op} {comment_text(op.label or '')}".rstrip())
        out.extend(f"    {line}" for line in _op_lines(plan, op, i))
    out += [
        "    cuda.synchronize()",
        "    for ptr in allocations:",
        "        check(driver.cuMemFree(ptr))",
        "",
        "",
        f"def main(repeat={int(repeat)}):",
        "    global sm_count",
        "    sm_count = cuda.get_current_device().MULTIPROCESSOR_COUNT",
        *_setup_lines(plan),
        "    run_program(streams, handles, events, b, p)  # warm-up: compiles kernels",
        "    makespans = []",
        "    for _ in range(repeat):",
        "        t0 = time.perf_counter_ns()",
        "        run_program(streams, handles, events, b, p)",
        "        makespans.append((time.perf_counter_ns() - t0) / 1000.0)",
        "    print(json.dumps({'pipeline': " + repr(comment_text(pipeline.name)) + ", "
        "'makespan_us': statistics.median(makespans), 'runs_us': makespans}))",
        "",
        "",
        "sm_count = 1",
        "",
        'if __name__ == "__main__":',
        f"    main(int(sys.argv[1]) if len(sys.argv) > 1 else {int(repeat)})",
        "",
    ]
    return "\n".join(out)
