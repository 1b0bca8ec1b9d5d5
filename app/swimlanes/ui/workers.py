"""Work off the UI thread: re-simulation after edits (throttled, synchronous when small, in a
worker thread with cancel when it could take long) and TaskRunner for any other long function
(trace import).

The pattern follows Orange3's concurrent widgets: a plain function does the work and takes
``progress``/``cancel`` callbacks; a QRunnable runs it on the thread pool; results come back to
the UI thread through queued signals tagged with a generation number, so a result that a newer
edit has made stale is dropped, and the stale run itself is cancelled through its ``cancel``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from swimlanes.model.document import MULTI_DEVICE_OPS, Pipeline
from swimlanes.ui.main_thread_gc import install_main_thread_gc

if TYPE_CHECKING:  # numpy comes with it: not before the window's first paint
    from swimlanes.timeline.timeline import Timeline

#: Pipelines whose simulation takes fewer steps than this simulate on the UI thread (a few
#: milliseconds: faster than a thread hop); anything larger runs in a worker with cancel.
SYNC_OP_LIMIT = 2000
#: The block scheduler takes about one step per wave of a kernel's blocks over the whole GPU;
#: no preset has more than this many block slots (SMs x resident blocks).
_BLOCK_SLOTS_PER_STEP = 1024
#: Pipelines of several devices (or with peer copies and collectives) are simulated by the
#: multi-device engine, about ten times slower per op than the fast single-device one (55 us
#: an op on the 8-GPU DDP example): they leave the UI thread ten times sooner.
MULTI_DEVICE_STEP_COST = 10
DEBOUNCE_MS = 120
#: While a task runs, the UI thread beats this often; a task whose ``cancel`` poll finds no
#: beat for UI_STARVED_S pauses (releasing the GIL) until the next beat, UI_WAIT_S at most.
UI_BEAT_MS = 20
UI_STARVED_S = 0.06
UI_WAIT_S = 0.05

SimulateFn = Callable[..., "Timeline"]


def _default_simulate(pipeline: Pipeline, device: Any, **kwargs: Any) -> Timeline:
    from swimlanes.engine import simulate

    return simulate(pipeline, device, **kwargs)


def simulation_steps(pipeline: Pipeline) -> int:
    """A cheap upper estimate of the simulator's work for ``pipeline``: one step per op plus
    one per wave of kernel blocks. It decides whether a run may block the UI thread: a single
    kernel of a billion blocks is one op but seconds of simulation."""
    waves = 0
    multi = pipeline.is_multi_device
    for op in pipeline.program:
        blocks = op.blocks
        if op.op == "kernel" and isinstance(blocks, int) and blocks > _BLOCK_SLOTS_PER_STEP:
            waves += blocks // _BLOCK_SLOTS_PER_STEP
        multi = multi or op.op in MULTI_DEVICE_OPS
    steps = len(pipeline.program) + waves
    return steps * MULTI_DEVICE_STEP_COST if multi else steps


def _is_cancellation(err: BaseException) -> bool:
    return type(err).__name__ == "SimulationCancelled"


def _error_text(err: BaseException) -> str:
    problems = getattr(err, "problems", None)
    if problems:
        return "\n".join(str(p) for p in problems)
    return str(err) or type(err).__name__


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
        #: Whether the last result came from the worker thread (a large pipeline).
        self.last_from_worker = False
        self._simulate = simulate_fn or _default_simulate
        self._generation = 0
        self._busy = False
        self._pending = False
        # Large pipelines simulate in a worker thread; starting a newer run cancels a stale one.
        self._tasks = TaskRunner(self)
        self._tasks.finished.connect(self._on_task_done)
        self._tasks.failed.connect(self._on_task_failed)
        self._tasks.progress.connect(self.progress)
        self._tasks.busy_changed.connect(self._set_busy)
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
        self._generation += 1
        self._tasks.cancel()  # a running worker sees itself stale and stops early
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
        if simulation_steps(pipeline) < self.sync_op_limit:
            # On the UI thread nothing can edit the document meanwhile: no copy needed.
            self._tasks.cancel()
            t0 = time.perf_counter()
            try:
                timeline = self._simulate(pipeline, device)
            except Exception as err:  # noqa: BLE001 - shown in the status bar, never a crash
                self._on_error(gen, _error_text(err))
                return
            self._on_done(gen, timeline, time.perf_counter() - t0, from_worker=False)
            return
        simulate = self._simulate
        pipeline = pipeline.copy()  # the worker must not see later edits half-applied

        def work(
            progress: Callable[[float], None], cancel: Callable[[], bool]
        ) -> tuple[Timeline, float]:
            t0 = time.perf_counter()
            timeline = simulate(pipeline, device, progress=progress, cancel=cancel)
            return timeline, time.perf_counter() - t0

        self._tasks.start(work)

    def is_busy(self) -> bool:
        return self._busy

    def cancel(self) -> bool:
        """Stop the simulation running in the worker (the user's Cancel): ``failed`` says so,
        since the schedule on screen is then not the document's. False if none was running."""
        if not self._busy:
            return False
        self._timer.stop()
        self._pending = False
        self._generation += 1
        self._tasks.cancel()
        self._set_busy(False)
        self.failed.emit("stopped before it finished (Simulate runs it again)")
        return True

    def shutdown(self, msecs: int = 3000) -> None:
        """Stop pending work (the app is closing)."""
        self._timer.stop()
        self._generation += 1
        self._tasks.shutdown(msecs)

    # -- results ------------------------------------------------------------------------------
    def _is_stale(self, generation: int) -> bool:
        return generation != self._generation

    def _on_done(
        self, generation: int, timeline: Timeline, seconds: float, *, from_worker: bool
    ) -> None:
        if self._is_stale(generation):
            return
        self._set_busy(False)
        self.last_timeline = timeline
        self.last_seconds = seconds
        self.last_from_worker = from_worker
        self.simulated.emit(timeline)

    def _on_error(self, generation: int, message: str) -> None:
        if self._is_stale(generation):
            return
        self._set_busy(False)
        self.failed.emit(message)

    def _on_task_done(self, result: object) -> None:
        timeline, seconds = result  # type: ignore[misc] - what work() returns
        self._on_done(self._generation, timeline, seconds, from_worker=True)

    def _on_task_failed(self, err: object) -> None:
        if isinstance(err, BaseException) and _is_cancellation(err):
            return
        self._on_error(self._generation, _error_text(err))  # type: ignore[arg-type]

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)


# -- any long function, one at a time -----------------------------------------------------------
class _TaskRelay(QObject):
    """Lives on the UI thread; a task's thread emits through it (queued to the UI thread).

    ``beat`` is when the UI thread last ran its event loop (a timer while a task runs): a task
    reads it to see whether it is starving the UI thread of the GIL. CPython hands the GIL to
    a waiting thread only now and then when the running one releases it often (file reads),
    and a trace being parsed kept the window from redrawing for a second.
    """

    done = Signal(int, object)
    error = Signal(int, object)
    progress = Signal(int, float)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.beat = time.monotonic()
        self.beat_timer = QTimer(self)
        self.beat_timer.setInterval(UI_BEAT_MS)
        self.beat_timer.timeout.connect(self._on_beat)

    def _on_beat(self) -> None:
        self.beat = time.monotonic()


class _Task(QRunnable):
    def __init__(
        self,
        generation: int,
        work: Callable[[Callable[[float], None], Callable[[], bool]], Any],
        is_stale: Callable[[int], bool],
        relay: _TaskRelay,
    ) -> None:
        super().__init__()
        self.generation = generation
        self._work = work
        self._is_stale = is_stale
        self._relay = relay
        self._shown = -1

    def _progress(self, fraction: float) -> None:
        # Only changes of a tenth of a percent cross threads: a flood of queued signals
        # would keep the UI thread busy for nothing.
        step = int(1000 * min(max(float(fraction), 0.0), 1.0))
        if step != self._shown:
            self._shown = step
            self._relay.progress.emit(self.generation, step / 1000)

    def _cancelled(self) -> bool:
        # Each poll also checks that the UI thread has run lately; if not, wait for its next
        # beat with the GIL released (see _TaskRelay).
        relay = self._relay
        now = time.monotonic()
        if now - relay.beat > UI_STARVED_S:
            last, give_up = relay.beat, now + UI_WAIT_S
            while relay.beat == last and time.monotonic() < give_up:
                time.sleep(0.001)
        return self._is_stale(self.generation)

    def run(self) -> None:
        gen = self.generation
        try:
            result = self._work(self._progress, self._cancelled)
        except Exception as err:  # noqa: BLE001 - handed to the UI thread, which reports it
            self._relay.error.emit(gen, err)
            return
        self._relay.done.emit(gen, result)


class TaskRunner(QObject):
    """Runs one long function at a time in a worker thread, so the UI thread never waits.

    ``start(work)`` runs ``work(progress, cancel)``, the plain-function pattern of the Qt-free
    packages. Its result arrives on the UI thread as ``finished(object)``, an exception it
    raised as ``failed(object)`` (the exception itself, so the caller decides how to word it),
    its progress as ``progress(float)``. ``cancel()``, or starting another task, makes the
    running one stale: its ``cancel`` callback answers True from then on, and whatever it
    returns or raises afterwards is dropped. ``busy_changed(bool)`` follows whether a task
    that still counts is running.
    """

    finished = Signal(object)
    failed = Signal(object)
    progress = Signal(float)
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        # Its thread must never run the garbage collector over Qt objects of the UI thread.
        install_main_thread_gc()
        self._generation = 0
        self._busy = False
        self._pool = QThreadPool(self)
        # One thread: a cancelled task winds down before the next one starts its work.
        self._pool.setMaxThreadCount(1)
        self._relay = _TaskRelay(self)
        self._relay.done.connect(self._on_done)
        self._relay.error.connect(self._on_error)
        self._relay.progress.connect(self._on_progress)

    def start(self, work: Callable[[Callable[[float], None], Callable[[], bool]], Any]) -> None:
        """Run ``work(progress, cancel)`` in the worker thread (a running task is cancelled)."""
        self._generation += 1
        self._set_busy(True)
        self._relay.beat = time.monotonic()
        self._pool.start(_Task(self._generation, work, self._is_stale, self._relay))

    def cancel(self) -> bool:
        """Stop the running task; False if none was running."""
        was_busy = self._busy
        self._generation += 1
        self._set_busy(False)
        return was_busy

    def is_busy(self) -> bool:
        return self._busy

    def shutdown(self, msecs: int = 3000) -> None:
        """Cancel and wait for the worker thread (the window is closing)."""
        self.cancel()
        self._pool.waitForDone(msecs)

    def _is_stale(self, generation: int) -> bool:
        return generation != self._generation

    def _on_done(self, generation: int, result: object) -> None:
        if not self._is_stale(generation):
            self._set_busy(False)
            self.finished.emit(result)

    def _on_error(self, generation: int, err: object) -> None:
        if not self._is_stale(generation):
            self._set_busy(False)
            self.failed.emit(err)

    def _on_progress(self, generation: int, fraction: float) -> None:
        if not self._is_stale(generation):
            self.progress.emit(fraction)

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            if busy:
                self._relay.beat_timer.start()
            else:
                self._relay.beat_timer.stop()
            self.busy_changed.emit(busy)
