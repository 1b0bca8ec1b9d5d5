"""Compile the simulator's compiled loop into numba's cache, in a process of its own:
``python -m swimlanes.engine.core.warm``. The app starts this at low priority when the cache is
empty (a fresh install, or new sources), so that later simulations load the loop in about
0.4 s instead of compiling it for 30 to 45 s."""

from __future__ import annotations

import contextlib
import os


def compile_once() -> bool:
    """Compile the loop by simulating a small pipeline with it; True when it ran."""
    from swimlanes.engine import core
    from swimlanes.engine.simulator import simulate
    from swimlanes.model.document import Op, Pipeline, Stream

    pipeline = Pipeline(
        name="warm-up",
        streams=[Stream("a"), Stream("b", kind="non_blocking")],
        program=[
            Op("h2d", stream="a", bytes=1 << 20),
            Op("kernel", stream="a", blocks=264, threads=256, duration_us=20.0),
            Op("event_record", stream="a", event="e"),
            Op("event_wait", stream="b", event="e"),
            Op("d2h", stream="b", bytes=1 << 20, host_memory="pageable"),
            Op("device_sync"),
        ],
    )
    before = core.compiled_runs()
    previous = os.environ.get(core.ENGINE_VARIABLE)
    os.environ[core.ENGINE_VARIABLE] = "compiled"
    try:
        simulate(pipeline, "h200")
    finally:
        if previous is None:
            del os.environ[core.ENGINE_VARIABLE]
        else:
            os.environ[core.ENGINE_VARIABLE] = previous
    return core.compiled_runs() > before


def main() -> int:
    from swimlanes.engine import core

    with contextlib.suppress(AttributeError, OSError):  # (no os.nice on Windows)
        os.nice(10)  # a background job: the user's work comes first
    if core.cache_ready():
        return 0
    return 0 if compile_once() else 1


if __name__ == "__main__":
    raise SystemExit(main())
