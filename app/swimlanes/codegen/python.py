"""Generate a standalone Numba CUDA script that issues the pipeline's CUDA calls.

The script needs numba-cuda and cuda-bindings, not Swimlanes. Kernels spin on ``%globaltimer``
like the executor's synthetic kernels, so its makespan is comparable with ``swimlanes run``.
"""

from __future__ import annotations

from collections.abc import Callable

from swimlanes.codegen.plan import (
    MAX_GRID_BLOCKS,
    CodegenError,
    CodePlan,
    checked_int,
    float_literal,
    label_changes,
    make_plan,
    op_bytes,
    python_string_literal,
    rounded_int,
)
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


# The label of the op being issued (set before each labelled op), named in CUDA errors.
op_label = ""


def issued_label():
    return op_label


def check(result):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        label = issued_label()
        where = f" at the op labelled {label!r}" if label else ""
        raise RuntimeError(f"CUDA driver error {err}{where}")
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


def _lit(text: str) -> str:
    return python_string_literal(text)


def _stream_key(plan: CodePlan, op: Op, index: int) -> str:
    try:
        return _lit(plan.stream_id(op.stream_name))
    except KeyError:
        raise CodegenError(f"program[{index}].stream: no stream {op.stream_name!r}") from None


def _stream(plan: CodePlan, op: Op, index: int) -> str:
    return f"streams[{_stream_key(plan, op, index)}]"


def _handle(plan: CodePlan, op: Op, index: int) -> str:
    return f"handles[{_stream_key(plan, op, index)}]"


def _copy_line(plan: CodePlan, op: Op, index: int) -> list[str]:
    n = op_bytes(plan.pipeline, index)
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
    handle = _handle(plan, op, index)
    lines = [f"check(driver.{call}Async({dst}, {src}, {n}, {handle}))"]
    if not op.effective_async:
        lines.append(f"check(driver.cuStreamSynchronize({handle}))")
    return lines


def _kernel_line(plan: CodePlan, op: Op, index: int) -> list[str]:
    where = f"program[{index}]"
    blocks = checked_int(op.blocks or 1, f"{where}.blocks", 1, MAX_GRID_BLOCKS)
    threads = checked_int(op.threads or 1, f"{where}.threads", 1, 1024)
    launch = f"[{blocks}, {threads}, {_stream(plan, op, index)}]"
    if op.block_us is not None:
        return [f"spin_kernel{launch}({rounded_int(op.block_us * 1000, f'{where}.block_us')})"]
    if op.duration_us is not None:
        ns = rounded_int(op.duration_us * 1000, f"{where}.duration_us")
        return [f"spin_kernel{launch}(block_ns_for({ns}, {blocks}, {threads}, sm_count))"]
    fmas = rounded_int((op.flops or 0) // (2 * blocks * threads), f"{where}.flops")
    nbytes = checked_int(op.bytes or 0, f"{where}.bytes")
    data = "b." + (plan.buffers.device_buffer(nbytes) if nbytes else "scratch")
    return [f"roofline_kernel{launch}({fmas}, {data}, {nbytes})"]


def _event(plan: CodePlan, op: Op, index: int) -> str:
    try:
        return f"events[{_lit(plan.event_ids[op.event or ''])}]"
    except KeyError:
        raise CodegenError(f"program[{index}].event: missing") from None


def _event_op(plan: CodePlan, op: Op, index: int) -> list[str]:
    event = _event(plan, op, index)
    if op.op == "event_sync":
        return [f"{event}.synchronize()"]
    return [f"{event}.{op.op[6:]}({_stream(plan, op, index)})"]


def _host(plan: CodePlan, op: Op, index: int) -> list[str]:
    us = float_literal(op.duration_us or 0.0, f"program[{index}].duration_us")
    if op.op == "host":
        return [f"busy_wait_us({us})"]
    return [f"{_stream(plan, op, index)}.add_callback(host_func({us}))"]


def _malloc(plan: CodePlan, op: Op, index: int) -> list[str]:
    return [f"allocations.append(check(driver.cuMemAlloc({op_bytes(plan.pipeline, index)})))"]


def _free(plan: CodePlan, op: Op, index: int) -> list[str]:
    # cudaFree synchronises the device; with nothing allocated, synchronise like it would.
    return ["check(driver.cuMemFree(allocations.pop(0))) if allocations else cuda.synchronize()"]


def _memset(plan: CodePlan, op: Op, index: int) -> list[str]:
    n = op_bytes(plan.pipeline, index)
    ptr = f"p.{plan.buffers.device_buffer(n)}"
    if op.effective_async:
        return [f"check(driver.cuMemsetD8Async({ptr}, 0, {n}, {_handle(plan, op, index)}))"]
    return [f"check(driver.cuMemsetD8({ptr}, 0, {n}))"]


#: The code of each single-device kind (the multi-device kinds are in ``python_multi``).
EMITTERS: dict[str, Callable[[CodePlan, Op, int], list[str]]] = {
    "h2d": _copy_line,
    "d2h": _copy_line,
    "d2d": _copy_line,
    "memset": _memset,
    "kernel": _kernel_line,
    "event_record": _event_op,
    "event_wait": _event_op,
    "event_sync": _event_op,
    "stream_sync": lambda plan, op, index: [f"{_stream(plan, op, index)}.synchronize()"],
    "device_sync": lambda plan, op, index: ["cuda.synchronize()"],
    "host": _host,
    "host_func": _host,
    "malloc": _malloc,
    "free": _free,
}


def _op_lines(plan: CodePlan, op: Op, index: int) -> list[str]:
    emit = EMITTERS.get(op.op)
    if emit is None:
        raise CodegenError(f"program[{index}].op: no code for {op.op!r}")
    return emit(plan, op, index)


def _setup_lines(plan: CodePlan) -> list[str]:
    lines = ["    b = types.SimpleNamespace()", "    streams = {"]
    for s in plan.streams:
        ident, kind = _lit(plan.stream_ids[s.name]), _lit(s.kind)
        lines.append(f"        {ident}: make_stream({kind}, {int(s.priority)}),")
    lines.append("    }")
    lines.append("    events = {")
    for ident in plan.event_ids.values():
        lines.append(f"        {_lit(ident)}: cuda.event(timing=False),")
    lines.append("    }")
    for n, name in plan.buffers.device.items():
        lines.append(f"    b.{name} = cuda.device_array({n}, dtype=np.uint8)  # {format_bytes(n)}")
    for n, name in plan.buffers.pinned.items():
        lines.append(f"    b.{name} = cuda.pinned_array({n}, dtype=np.uint8)")
    for n, name in plan.buffers.pageable.items():
        lines.append(f"    b.{name} = np.ones({n}, dtype=np.uint8)")
    for i, name in plan.d2d_sources.items():
        lines.append(
            f"    b.{name} = cuda.device_array({op_bytes(plan.pipeline, i)}, dtype=np.uint8)"
        )
    lines.append("    b.scratch = cuda.device_array(1, dtype=np.uint8)")
    lines.append(
        "    # Raw pointers and stream handles: the driver calls take these, like CUDA C does."
    )
    lines.append("    handles = {k: driver.CUstream(int(s)) for k, s in streams.items()}")
    lines.append("    p = types.SimpleNamespace(**{k: pointer(v) for k, v in vars(b).items()})")
    return lines


def generate_python(pipeline: Pipeline, *, repeat: int = 5) -> str:
    """The whole script as text (printable ASCII only). Raises :class:`CodegenError` for a
    number the script cannot hold."""
    plan = make_plan(pipeline)
    out = [
        # Fixed text only in the first two lines: Python reads an encoding from a comment there.
        "#!/usr/bin/env python3",
        "# Generated by Swimlanes: the pipeline's CUDA calls in program order, with Numba CUDA.",
        "# It prints the makespan. Names and labels from the pipeline are in string literals.",
        _PRELUDE,
        "",
        f"PIPELINE_NAME = {_lit(pipeline.name)}",
        "",
        "",
        "def run_program(streams, handles, events, b, p):",
        "    global op_label",
        "    allocations = []",
    ]
    labels = label_changes(pipeline)
    for i, op in enumerate(pipeline.program):
        out.append(f"    # [{i}] {op.op}")
        if (label := labels[i]) is not None:
            out.append(f"    op_label = {_lit(label)}")
        out.extend(f"    {line}" for line in _op_lines(plan, op, i))
    out += [
        "    cuda.synchronize()",
        "    for ptr in allocations:",
        "        check(driver.cuMemFree(ptr))",
        "    op_label = ''",
        "",
        "",
        f"def main(repeat={checked_int(repeat, 'repeat', 1)}):",
        "    global sm_count",
        "    sm_count = cuda.get_current_device().MULTIPROCESSOR_COUNT",
        *_setup_lines(plan),
        *timed_runs("run_program(streams, handles, events, b, p)", "compiles kernels", []),
        *script_end(checked_int(repeat, "repeat", 1)),
    ]
    return "\n".join(out)


def timed_runs(call: str, warm_up: str, teardown: list[str]) -> list[str]:
    """The end of ``main()``: a warm-up ``call``, ``repeat`` timed ones, ``teardown``, and the
    median makespan printed as JSON."""
    return [
        f"    {call}  # warm-up: {warm_up}",
        "    makespans = []",
        "    for _ in range(repeat):",
        "        t0 = time.perf_counter_ns()",
        f"        {call}",
        "        makespans.append((time.perf_counter_ns() - t0) / 1000.0)",
        *teardown,
        "    print(json.dumps({'pipeline': PIPELINE_NAME, "
        "'makespan_us': statistics.median(makespans), 'runs_us': makespans}))",
    ]


def script_end(repeat: int) -> list[str]:
    """The script's last lines: ``sm_count`` for the kernels, and ``main()`` run with the
    repetitions argv[1] asks for (else ``repeat``)."""
    return [
        "",
        "",
        "sm_count = 1",
        "",
        'if __name__ == "__main__":',
        f"    main(int(sys.argv[1]) if len(sys.argv) > 1 else {repeat})",
        "",
    ]
