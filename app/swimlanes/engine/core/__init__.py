"""A compiled (numba) event loop for single-device simulations, bit-identical to the Python
loop of :mod:`swimlanes.engine.simulator`.

:func:`run_compiled` takes a simulator run as RunState sets it up, runs the whole event loop
in compiled code over typed arrays (see ``layout`` for the tables), a bounded number of steps
at a time so that cancel and progress are polled between them, and writes the results back
into the run, where build_timeline reads them as it reads the Python loop's. It declines (and
the Python loop runs) when numba is missing or fails, when a time would reach the clock's
range (2**62 ns: the Python loop then answers or raises SimulationRangeError), or when the
environment says so: ``SWIMLANES_ENGINE=python|compiled|auto`` (default ``auto``: compiled from
:data:`AUTO_MIN_OPS` ops on when numba has the loop cached (:data:`AUTO_MIN_OPS_FEW_SHAPES` for
a pipeline of few op shapes), or :data:`AUTO_MIN_OPS_WARM` once
the compiled loop has run). The app fills numba's cache in a background process of its own
(:func:`start_warming`), so a first compile never holds up a simulation.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swimlanes.engine.errors import SimulationCancelled

if TYPE_CHECKING:
    from swimlanes.engine.state import RunState

__all__ = [
    "AUTO_MIN_OPS",
    "AUTO_MIN_OPS_FEW_SHAPES",
    "AUTO_MIN_OPS_WARM",
    "ENGINE_VARIABLE",
    "cache_ready",
    "compiled_runs",
    "run_compiled",
    "start_warming",
    "wants_compiled",
]

log = logging.getLogger(__name__)

#: The environment variable that picks the event loop.
ENGINE_VARIABLE = "SWIMLANES_ENGINE"
#: ``auto`` runs a pipeline compiled from this many ops on while the compiled loop has not run in
#: this process yet, and from AUTO_MIN_OPS_WARM ops on once it has. Measured on the 2-core
#: development machine (Python 3.11, numba 0.68, the benchmark's random mix on h200, CPU time
#: of simulate() in a fresh process; benchmarks/results/engine-2-core.md): importing numba and
#: loading the cached core costs about 0.43 s once, after which simulate() takes 3.9 us per op
#: compiled against 9.2 us in Python (planning, 2.5 us, included). Fresh process, compiled /
#: Python: 0.53 / 0.48 s at 50,000 ops, 0.66-0.75 / 0.77-0.83 s at 80,000, 0.87-0.92 /
#: 1.12-1.17 s at 120,000: the cross-over lies near 60,000 ops.
AUTO_MIN_OPS = 60_000
#: The same for a pipeline of few op shapes (fewer than one per two ops), which the Python
#: loop runs faster (the planner works each shape out once): bench_engine.py's repetitive case
#: in a fresh process (2026-11-25, wall time, 2 rounds), Python / compiled: 0.43-0.44 /
#: 0.51-0.75 s at 100,000 ops, 0.66 / 0.65-0.67 s at 150,000.
AUTO_MIN_OPS_FEW_SHAPES = 150_000
#: Once loaded, the compiled loop is faster from a few hundred ops on (CPU per simulate(),
#: median of 7, Python / compiled: 1.85 / 1.72 ms at 100 ops, 4.4 / 2.1 ms at 300, 9.2 / 4.5 ms
#: at 1,000, 84 / 36 ms at 10,000).
AUTO_MIN_OPS_WARM = 300
#: Steps of the compiled loop between polls of cancel and progress.
STEPS_PER_CALL = 1 << 16

#: The modules numba compiles (their sources decide whether its cache is still valid).
_COMPILED_MODULES = (
    "blocks",
    "borrow",
    "buffers",
    "copy_engines",
    "host",
    "layout",
    "loop",
    "queues",
)

_loaded: dict[str, Any] = {}
_counts = {"compiled": 0}


def compiled_runs() -> int:
    """How many simulations the compiled loop has run in this process (tests check that the
    path they force was taken)."""
    return _counts["compiled"]


def wants_compiled(n_ops: int, shapes: int | None = None) -> bool:
    """Whether SWIMLANES_ENGINE (and, for ``auto``, the size and, given ``shapes``, how many
    distinct op shapes the plan has) asks for the compiled loop."""
    choice = os.environ.get(ENGINE_VARIABLE, "auto").strip().lower() or "auto"
    if choice == "python":
        return False
    if choice == "compiled":
        return True
    if choice != "auto":
        _warn_once(f"{ENGINE_VARIABLE}={choice!r} is not python, compiled or auto: using auto")
    if _counts["compiled"]:
        return n_ops >= AUTO_MIN_OPS_WARM
    # Before its first run in this process, only if numba has the machine code cached: a
    # first compile takes 30 to 45 s on the 2-core machine, far longer than the Python loop
    # takes for any pipeline the validator allows (9.2 us per op, under 10 s at MAX_OPS).
    few_shapes = shapes is not None and shapes * 2 < n_ops
    return n_ops >= (AUTO_MIN_OPS_FEW_SHAPES if few_shapes else AUTO_MIN_OPS) and cache_ready()


def cache_ready() -> bool:
    """Whether the compiled loop is loaded in this process, or numba's cache holds its
    machine code for the current sources (so that loading it costs about 0.4 s, not a
    compile). ``python -m swimlanes.engine.core.warm`` fills that cache."""
    if "chunk" in _loaded:
        return _loaded["chunk"] is not None
    try:
        _clear_stale_cache()
        from swimlanes.engine.core.loop import run_chunk  # (defines it: compiles nothing)

        # numba's own record of the cached function (not a public API: any surprise here
        # reads as "not cached", and the Python loop runs).
        index = getattr(run_chunk, "_cache")._cache_file._index_path  # noqa: B009 (private)
        return os.path.exists(index)
    except Exception:
        return False


def _warn_once(message: str) -> None:
    if message not in _loaded.setdefault("warned", set()):
        _loaded["warned"].add(message)
        log.warning(message)


def _chunk_function() -> Callable[..., Any] | None:
    """The compiled loop (imported, and compiled or loaded from numba's cache, on first use);
    None, with one warning, when numba cannot provide it."""
    if "chunk" not in _loaded:
        try:
            _clear_stale_cache()
            from swimlanes.engine.core.loop import run_chunk

            _loaded["chunk"] = run_chunk
        except Exception as err:  # numba missing or broken: the Python loop runs
            _warn_once(f"compiled simulator core unavailable ({err}): using the Python loop")
            _loaded["chunk"] = None
    return _loaded["chunk"]


def _clear_stale_cache() -> None:
    """Drop numba's cached machine code of this package when any of its sources changed:
    numba checks a cached function against its own file only, not the files of the functions
    it calls (an edit to host.py would leave loop.py's stale code in use). An installed,
    read-only copy is left alone: its sources change only with a reinstall, which rewrites
    every file. Once per process: cache_ready and the first load both ask, and the sources a
    process has imported do not change under it."""
    if _loaded.get("cache_checked"):
        return
    _loaded["cache_checked"] = True
    folder = Path(__file__).parent
    try:
        sources = b"".join((folder / f"{name}.py").read_bytes() for name in _COMPILED_MODULES)
    except OSError:  # no sources beside the package (a frozen bundle): nothing to compare
        return
    digest = hashlib.sha256(sources).hexdigest()
    cache = folder / "__pycache__"
    stamp = cache / "core-sources.sha256"
    try:
        if stamp.read_text(encoding="ascii") == digest:
            return
    except OSError:
        pass  # no stamp yet
    try:
        cache.mkdir(exist_ok=True)
        for path in cache.glob("*.nb[ci]"):
            path.unlink()
        stamp.write_text(digest, encoding="ascii")
    except OSError:
        pass


class _CoreFailed(Exception):
    """The compiled loop itself failed (numba could not compile or load it)."""


def run_compiled(
    run: RunState,
    progress: Callable[[float], None] | None,
    cancel: Callable[[], bool] | None,
) -> bool:
    """Run ``run``'s event loop compiled if SWIMLANES_ENGINE and its size ask for it: True
    when it did (the results are in ``run``), False when the Python loop should run it
    (``run`` untouched). Raises SimulationCancelled when ``cancel`` says so."""
    if run.n == 0 or not wants_compiled(run.n, run.plan.shape_count):
        return False
    chunk = _chunk_function()
    if chunk is None:
        return False
    from swimlanes.engine.core import layout
    from swimlanes.engine.core.prepare import OutOfReach, build_state, reset_outputs, write_back

    try:
        state = build_state(run)
    except (OutOfReach, OverflowError):  # inputs past what int64 times hold: Python's
        return False
    except Exception as err:  # a defect here must not fail the user's simulation
        _warn_once(f"compiled simulator core failed ({err!r}): using the Python loop")
        return False
    try:
        status = _run_chunks(chunk, state, run.n, progress, cancel)
    except _CoreFailed as failed:  # a compile failure: never the user's simulation's
        reset_outputs(state)
        _warn_once(f"compiled simulator core failed ({failed.__cause__!r}): using the Python loop")
        _loaded["chunk"] = None
        return False
    except BaseException:  # cancelled, or raised by the caller's callbacks: theirs to handle
        reset_outputs(state)
        raise
    scalars = state.scalars
    unfinished = scalars[layout.HOST_I] < run.n or scalars[layout.HEAP_N] > 1
    if status == layout.OUT_OF_RANGE or unfinished:  # the Python loop answers or refuses it
        reset_outputs(state)
        return False
    write_back(run, state)
    _counts["compiled"] += 1
    return True


def _run_chunks(
    chunk: Callable[..., Any],
    state: Any,
    n: int,
    progress: Callable[[float], None] | None,
    cancel: Callable[[], bool] | None,
) -> int:
    """Call the compiled loop until it is done or out of range, polling between calls."""
    from swimlanes.engine.core import layout

    next_report = 0
    scalars = state.scalars
    while True:
        if cancel is not None and cancel():
            raise SimulationCancelled("simulation cancelled")
        if progress is not None:
            pct = int(scalars[layout.HOST_I]) * 100 // n
            if pct >= next_report:
                progress(min(0.99, pct / 100.0))
                next_report = pct + 1
        tables, buffers, outputs = tuple(state.tables), tuple(state.buffers), tuple(state.outputs)
        try:
            status, *state.buffers = chunk(tables, buffers, outputs, STEPS_PER_CALL)
        except Exception as err:
            raise _CoreFailed from err
        if status != layout.MORE:
            return int(status)


def start_warming() -> bool:
    """Start a background process, at low priority, that compiles the loop into numba's
    cache if it is not there yet, unless SWIMLANES_ENGINE is ``python``, the loop is loaded
    in this process already, or numba is missing. Returns whether one was started. (The app
    calls this once at start-up; the command-line tools never do.)"""
    import importlib.util
    import subprocess
    import sys

    if os.environ.get(ENGINE_VARIABLE, "auto").strip().lower() == "python":
        return False
    # (Whether the cache is ready is for the new process to find out: that imports numba,
    # which the caller's thread should not wait for.)
    if "chunk" in _loaded or importlib.util.find_spec("numba") is None:
        return False
    try:
        subprocess.Popen(
            [sys.executable, "-m", "swimlanes.engine.core.warm"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # outlives the app if it closes first
        )
    except OSError as err:
        _warn_once(f"could not start compiling the simulator core ({err})")
        return False
    return True
