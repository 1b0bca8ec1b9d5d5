"""Re-simulation after edits: throttled, synchronous when small, in a worker thread when large.

The pattern follows Orange3's concurrent widgets: a plain function does the work and takes
``progress``/``cancel`` callbacks; a QRunnable runs it on the thread pool; results come back to
the UI thread through queued signals tagged with a generation number, so a result that a newer
edit has made stale is dropped, and the stale run itself is cancelled through its ``cancel``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from swimlanes.model.document import Pipeline
from swimlanes.timeline.timeline import Timeline

#: Pipelines with fewer ops than this simulate on the UI thread: faster than a thread hop.
SYNC_OP_LIMIT = 2000
DEBOUNCE_MS = 120

SimulateFn = Callable[..., Timeline]


def _default_simulate(pipeline: Pipeline, device: Any, **kwargs: Any) -> Timeline:
    from swimlanes.engine import simulate

    return simulate(pipeline, device, **kwargs)


def _is_cancellation(err: BaseException) -> bool:
    return type(err).__name__ == "SimulationCancelled"


def _error_text(err: BaseException) -> str:
    problems = getattr(err, "problems", None)
    if problems:
        return "\n".join(str(p) for p in problems)
    return str(err) or type(err).__name__


class _Relay(QObject):
    """Lives on the UI thread; worker threads emit through it (queued to the UI thread)."""

    done = Signal(int, object, float)
    error = Signal(int, str)
    progress = Signal(int, float)


class _SimulationTask(QRunnable):
    def __init__(
        self,
        generation: int,
        run: Callable[[Callable[[float], None], Callable[[], bool]], Timeline],
        is_stale: Callable[[int], bool],
        relay: _Relay,
    ) -> None:
        super().__init__()
        self.generation = generation
        self._run = run
        self._is_stale = is_stale
        self._relay = relay

    def run(self) -> None:
        gen = self.generation
        t0 = time.perf_counter()
        try:
            timeline = self._run(
                lambda f: self._relay.progress.emit(gen, float(f)), lambda: self._is_stale(gen)
            )
        except Exception as err:  # noqa: BLE001 - reported to the UI as a message
            if not _is_cancellation(err):
                self._relay.error.emit(gen, _error_text(err))
            return
        self._relay.done.emit(gen, timeline, time.perf_counter() - t0)


class SimulationRunner(QObject):
    """Keeps a simulated timeline in step with the document.

    ``controller`` is anything with a ``pipeline`` attribute and a ``changed`` signal (the
    DocumentController). Signals: ``simulated(Timeline)``, ``failed(str)``, ``progress(float)``,
    ``busy_changed(bool)``. ``last_seconds`` is how long the last simulation took.
    """

    simulated = Signal(object)
    failed = Signal(str)
    progress = Signal(float)
    busy_changed = Signal(bool)

    def __init__(
        self,
        controller: Any,
        device: Any = "h200",
        *,
        simulate_fn: SimulateFn | None = None,
        sync_op_limit: int = SYNC_OP_LIMIT,
        debounce_ms: int = DEBOUNCE_MS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.controller = controller
        self.device = device
        self.sync_op_limit = sync_op_limit
        self.last_timeline: Timeline | None = None
        self.last_seconds = 0.0
        self._simulate = simulate_fn or _default_simulate
        self._generation = 0
        self._busy = False
        self._pending = False
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._relay = _Relay(self)
        self._relay.done.connect(self._on_done)
        self._relay.error.connect(self._on_error)
        self._relay.progress.connect(self._on_progress)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(debounce_ms)
        self._timer.timeout.connect(self._on_timer)
        controller.changed.connect(self.schedule)

    # -- public -------------------------------------------------------------------------------
    def set_device(self, device: Any) -> None:
        """Change the device preset (name, path or DevicePreset) and re-simulate."""
        self.device = device
        self.schedule()

    def schedule(self) -> None:
        """Re-simulate soon: at once when idle, else once the debounce interval has passed.

        The first edit after a quiet spell is simulated immediately (an edit shows within
        milliseconds); edits that follow within the interval, such as a drag's many moves,
        are coalesced into one run when it ends.
        """
        self._generation += 1  # a running worker sees itself stale and stops early
        if self._timer.isActive():
            self._pending = True
            return
        self._run()
        self._timer.start()

    def _on_timer(self) -> None:
        if self._pending:
            self._pending = False
            self._run()
            self._timer.start()

    def simulate_now(self) -> None:
        """Simulate the current document at once (small) or start a worker (large)."""
        self._timer.stop()
        self._pending = False
        self._run()

    def _run(self) -> None:
        self._generation += 1
        gen = self._generation
        pipeline = self.controller.pipeline
        device = self.device
        if len(pipeline.program) < self.sync_op_limit:
            # On the UI thread nothing can edit the document meanwhile: no copy needed.
            t0 = time.perf_counter()
            try:
                timeline = self._simulate(pipeline, device)
            except Exception as err:  # noqa: BLE001 - shown in the status bar, never a crash
                self._on_error(gen, _error_text(err))
                return
            self._on_done(gen, timeline, time.perf_counter() - t0)
            return
        simulate = self._simulate
        pipeline = pipeline.copy()  # the worker must not see later edits half-applied

        def run(progress: Callable[[float], None], cancel: Callable[[], bool]) -> Timeline:
            return simulate(pipeline, device, progress=progress, cancel=cancel)

        self._set_busy(True)
        self._pool.start(_SimulationTask(gen, run, self._is_stale, self._relay))

    def is_busy(self) -> bool:
        return self._busy

    def shutdown(self, msecs: int = 3000) -> None:
        """Stop pending work (the app is closing)."""
        self._timer.stop()
        self._generation += 1
        self._pool.waitForDone(msecs)

    # -- results ------------------------------------------------------------------------------
    def _is_stale(self, generation: int) -> bool:
        return generation != self._generation

    def _on_done(self, generation: int, timeline: Timeline, seconds: float) -> None:
        if self._is_stale(generation):
            return
        self._set_busy(False)
        self.last_timeline = timeline
        self.last_seconds = seconds
        self.simulated.emit(timeline)

    def _on_error(self, generation: int, message: str) -> None:
        if self._is_stale(generation):
            return
        self._set_busy(False)
        self.failed.emit(message)

    def _on_progress(self, generation: int, fraction: float) -> None:
        if not self._is_stale(generation):
            self.progress.emit(fraction)

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)
