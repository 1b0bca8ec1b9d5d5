"""Fake GPU executors for the child-process tests (run in the child, no GPU, no Qt).

Each has the signature of ``swimlanes.gpu.execute``; the child loads one with
``--executor fake_executor:<name>``.
"""

from __future__ import annotations

import os
import sys
import time

from swimlanes.model.document import Pipeline
from swimlanes.timeline.timeline import Timeline, TimelineBuilder

MS = 1_000_000


class ExecutionCancelled(Exception):
    """Named like the real executor's exception, which the child recognises by name."""


def fake_timeline(pipeline: Pipeline, stretch: float = 1.0) -> Timeline:
    """Every op runs 1 ms (times ``stretch``) after the previous one, on its stream."""
    b = TimelineBuilder([s.name for s in pipeline.all_streams], ["Copy", "Compute"])
    t = 0
    for i, op in enumerate(pipeline.program):
        dur = int(MS * stretch)
        b.add(
            index=i,
            kind=op.op,
            stream=op.stream_name,
            engine="Compute" if op.op == "kernel" else "Copy",
            issue_start=t,
            issue_end=t + 1000,
            start=t + 1000,
            end=t + 1000 + dur,
            solo_ns=dur,
            label=op.display_label,
        )
        t += 1000 + dur
    return b.build(source="measured", device="Fake GPU", name=pipeline.name)


def execute(
    pipeline, *, repeat=5, warmup=1, backend="auto", progress=None, cancel=None, on_partial=None
):
    for r in range(repeat):
        if progress:
            progress((r + 1) / repeat)
        if on_partial:
            on_partial(fake_timeline(pipeline, stretch=1.0 + 0.1 * r))
    return fake_timeline(pipeline, stretch=1.1)


def execute_noisy(pipeline, **kwargs):
    """Prints to stdout the way chatty libraries do; the protocol must survive it."""
    print("numba: compiling kernels...")
    os.write(1, b"raw write to fd 1\n")
    return execute(pipeline, **kwargs)


def execute_slow(pipeline, *, cancel=None, progress=None, on_partial=None, **_):
    """Runs until cancelled (at most 30 s)."""
    if on_partial:
        on_partial(fake_timeline(pipeline))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if cancel and cancel():
            raise ExecutionCancelled("cancelled")
        if progress:
            progress(0.1)
        time.sleep(0.02)
    return fake_timeline(pipeline)


def execute_error(pipeline, **_):
    raise RuntimeError("this pipeline needs 12.3 GiB of device memory, 8.0 GiB is free")


def execute_crash(pipeline, *, progress=None, **_):
    if progress:
        progress(0.3)
    sys.stderr.write("Segmentation fault in the driver\n")
    sys.stderr.flush()
    os._exit(139)


def execute_ignores_cancel(pipeline, *, progress=None, **_):
    """Never polls cancel: the parent must kill it after its grace period."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if progress:
        progress(0.1)
    time.sleep(30)
    return fake_timeline(pipeline)


# -- calibrators: stand-ins for swimlanes.gpu.auto_calibrate.ensure_calibrated -----------------
#: The host the fake calibrators calibrate (the cache is the test's SWIMLANES_CONFIG_DIR).
FAKE_HOST = {"gpu": "Fake GPU", "driver": "1.0", "cpu": "Fake CPU", "hostname": "fake-host"}


def calibrate_quickly(*, progress=None, cancel=None):
    """Caches the h200 figures as the fake host's calibration, with progress on the way."""
    from swimlanes.engine import get_preset
    from swimlanes.gpu.host import HostIdentity
    from swimlanes.gpu.preset_cache import store

    for i in range(4):
        if progress:
            progress((i + 1) / 4)
        time.sleep(0.05)
    return store(get_preset("h200").to_dict(), HostIdentity(**FAKE_HOST), quick=True), True


def calibrate_slow(*, progress=None, cancel=None):
    """Calibrates until cancelled (at most 30 s), caching nothing."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if cancel and cancel():
            raise ExecutionCancelled("calibration cancelled")
        if progress:
            progress(0.2)
        time.sleep(0.02)
    raise RuntimeError("never cancelled")
