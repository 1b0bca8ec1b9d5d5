"""A compiled (numba) event loop for single-device simulations, bit-identical to the Python
loop of :mod:`swimlanes.engine.simulator`.

:func:`run_compiled` takes a simulator run as RunState sets it up, runs the whole event loop
in compiled code over typed arrays (see ``layout`` for the tables), a bounded number of steps
at a time so that cancel and progress are polled between them, and writes the results back
into the run, where build_timeline reads them as it reads the Python loop's. It declines (and
the Python loop runs) when numba is missing or fails, when a time would reach the clock's
range (2**62 ns: the Python loop then answers or raises SimulationRangeError), or when the
environment says so: ``SWIMLANES_ENGINE=python|compiled|auto`` (default ``auto``: compiled from
:data:`AUTO_MIN_OPS` ops on).
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

__all__ = ["AUTO_MIN_OPS", "ENGINE_VARIABLE", "compiled_runs", "run_compiled", "wants_compiled"]

log = logging.getLogger(__name__)

#: The environment variable that picks the event loop.
ENGINE_VARIABLE = "SWIMLANES_ENGINE"
#: ``auto`` runs pipelines of at least this many ops compiled. Measured on the 2-core
#: development machine (Python 3.11, numba 0.68, random mix, h200): importing numba and loading
#: the cached core costs about 0.5 s once per process (see benchmarks/results/engine-2-core.md),
#: while the Python loop runs about 100,000 ops/s and the compiled one over 20 times faster.
AUTO_MIN_OPS = 20_000
#: Steps of the compiled loop between polls of cancel and progress.
STEPS_PER_CALL = 1 << 16

#: The modules numba compiles (their sources decide whether its cache is still valid).
_COMPILED_MODULES = ("buffers", "engines", "host", "layout", "loop", "queues")

_loaded: dict[str, Any] = {}
_counts = {"compiled": 0}


def compiled_runs() -> int:
    """How many simulations the compiled loop has run in this process (tests check that the
    path they force was taken)."""
    return _counts["compiled"]


def wants_compiled(n_ops: int) -> bool:
    """Whether SWIMLANES_ENGINE (and, for ``auto``, the size) asks for the compiled loop."""
    choice = os.environ.get(ENGINE_VARIABLE, "auto").strip().lower() or "auto"
    if choice == "python":
        return False
    if choice == "compiled":
        return True
    if choice != "auto":
        _warn_once(f"{ENGINE_VARIABLE}={choice!r} is not python, compiled or auto: using auto")
    return n_ops >= AUTO_MIN_OPS


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
    every file."""
    folder = Path(__file__).parent
    sources = b"".join((folder / f"{name}.py").read_bytes() for name in _COMPILED_MODULES)
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


def run_compiled(
    run: RunState,
    progress: Callable[[float], None] | None,
    cancel: Callable[[], bool] | None,
) -> bool:
    """Run ``run``'s event loop compiled if SWIMLANES_ENGINE and its size ask for it: True
    when it did (the results are in ``run``), False when the Python loop should run it
    (``run`` untouched). Raises SimulationCancelled when ``cancel`` says so."""
    if run.n == 0 or not wants_compiled(run.n):
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
    except SimulationCancelled:
        reset_outputs(state)
        raise
    except Exception as err:  # a compile failure: never the user's simulation's
        reset_outputs(state)
        _warn_once(f"compiled simulator core failed ({err!r}): using the Python loop")
        _loaded["chunk"] = None
        return False
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
        status, *buffers = chunk(*state.tables, *state.buffers, *state.outputs, STEPS_PER_CALL)
        state.buffers = buffers
        if status != layout.MORE:
            return int(status)
