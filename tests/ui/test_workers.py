"""SimulationRunner: debounced re-simulation, worker threads for large pipelines, stale drops."""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import QObject, Signal

from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.timeline.timeline import Timeline, TimelineBuilder
from swimlanes.ui.workers import SimulationRunner


class FakeController(QObject):
    changed = Signal()

    def __init__(self, n_ops: int) -> None:
        super().__init__()
        self.pipeline = Pipeline(
            streams=[Stream("s1")],
            program=[Op("kernel", stream="s1", blocks=1, threads=32, duration_us=1.0)] * n_ops,
        )


class SimulationCancelled(Exception):
    """Named like the engine's exception, which the runner recognises by name."""


def fake_simulate(pipeline: Pipeline, device, progress=None, cancel=None) -> Timeline:
    b = TimelineBuilder(["s1"], ["Compute"])
    for i, op in enumerate(pipeline.program):
        if cancel is not None and i % 100 == 0:
            if cancel():
                raise SimulationCancelled()
            if progress:
                progress(i / len(pipeline.program))
        b.add(
            index=i,
            kind=op.op,
            stream="s1",
            engine="Compute",
            issue_start=i,
            issue_end=i + 1,
            start=i + 1,
            end=i + 2,
        )
    return b.build(device=str(device), name=f"{len(pipeline.program)} ops")


def test_first_edit_runs_at_once_and_a_burst_is_coalesced(qtbot) -> None:
    controller = FakeController(10)
    calls: list[int] = []

    def counting(pipeline, device, **kw):
        calls.append(len(pipeline.program))
        return fake_simulate(pipeline, device, **kw)

    runner = SimulationRunner(controller, "ideal", simulate_fn=counting, debounce_ms=80)
    results: list[Timeline] = []
    runner.simulated.connect(results.append)
    controller.changed.emit()
    assert calls == [10]  # no waiting for the first edit
    for n in (11, 12, 13, 14):  # a drag: four more edits inside the interval
        controller.pipeline = FakeController(n).pipeline
        controller.changed.emit()
    assert calls == [10]
    qtbot.waitUntil(lambda: len(calls) == 2, timeout=2000)
    assert calls == [10, 14]  # one trailing run sees the final document
    assert results[-1].name == "14 ops" and runner.last_timeline is results[-1]
    assert results[0].device == "ideal"
    qtbot.wait(200)
    assert len(calls) == 2  # nothing more once the edits stop


def test_small_pipelines_simulate_on_the_calling_thread(qtbot) -> None:
    controller = FakeController(10)
    threads: list[threading.Thread] = []

    def record(pipeline, device, **kw):
        threads.append(threading.current_thread())
        return fake_simulate(pipeline, device, **kw)

    runner = SimulationRunner(controller, simulate_fn=record)
    with qtbot.waitSignal(runner.simulated, timeout=1000):
        runner.simulate_now()
    assert threads == [threading.main_thread()]


def test_large_pipelines_run_in_a_worker_with_progress(qtbot) -> None:
    controller = FakeController(3000)
    threads: list[threading.Thread] = []

    def record(pipeline, device, **kw):
        threads.append(threading.current_thread())
        return fake_simulate(pipeline, device, **kw)

    runner = SimulationRunner(controller, simulate_fn=record)
    progress: list[float] = []
    runner.progress.connect(progress.append)
    with qtbot.waitSignal(runner.simulated, timeout=5000) as sig:
        runner.simulate_now()
    assert len(sig.args[0]) == 3000
    assert threads and threads[0] is not threading.main_thread()
    assert progress and all(0 <= f <= 1 for f in progress)
    assert not runner.is_busy()


def test_a_newer_edit_cancels_the_stale_run_and_drops_its_result(qtbot) -> None:
    controller = FakeController(3000)
    cancelled: list[bool] = []
    started = threading.Event()

    def slow(pipeline, device, progress=None, cancel=None):
        if cancel is None:  # the small pipeline after the edit runs synchronously
            return fake_simulate(pipeline, device)
        started.set()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if cancel():
                cancelled.append(True)
                raise SimulationCancelled()
            time.sleep(0.005)
        return fake_simulate(pipeline, device)

    runner = SimulationRunner(controller, simulate_fn=slow)
    results: list[Timeline] = []
    runner.simulated.connect(results.append)
    runner.simulate_now()
    assert started.wait(2)
    controller.pipeline = FakeController(5).pipeline  # the edit makes it small and fast
    with qtbot.waitSignal(runner.simulated, timeout=3000):
        controller.changed.emit()
    qtbot.waitUntil(lambda: cancelled == [True], timeout=3000)
    qtbot.wait(50)
    assert [len(t) for t in results] == [5]


def test_simulation_errors_are_reported_not_raised(qtbot) -> None:
    controller = FakeController(3)

    def broken(pipeline, device, **kw):
        raise ValueError("unknown device preset 'h300'; valid: h200, a100")

    runner = SimulationRunner(controller, simulate_fn=broken)
    with qtbot.waitSignal(runner.failed, timeout=1000) as sig:
        runner.simulate_now()
    assert "unknown device preset" in sig.args[0]


def test_set_device_resimulates_with_the_new_device(qtbot) -> None:
    controller = FakeController(3)
    runner = SimulationRunner(controller, "h200", simulate_fn=fake_simulate, debounce_ms=10)
    with qtbot.waitSignal(runner.simulated, timeout=1000) as sig:
        runner.set_device("a100")
    assert sig.args[0].device == "a100"


def test_the_garbage_collector_never_runs_on_a_task_thread(qtbot) -> None:
    """Cycles holding Qt objects must be freed on the UI thread (see ui.main_thread_gc): a task
    that allocates past the collector's thresholds must not trigger a collection itself."""
    import gc

    from swimlanes.ui.workers import TaskRunner

    collected_on: list[int] = []

    def note_thread(phase: str, _info: dict) -> None:
        if phase == "start":
            collected_on.append(threading.get_ident())

    runner = TaskRunner()
    worker_threads: list[int] = []

    def allocate(progress, cancel) -> int:
        worker_threads.append(threading.get_ident())
        return len([[i] for i in range(200_000)])  # 200x the first generation's threshold

    gc.callbacks.append(note_thread)
    try:
        with qtbot.waitSignal(runner.finished, timeout=10_000) as result:
            runner.start(allocate)
    finally:
        gc.callbacks.remove(note_thread)
    assert result.args == [200_000]
    assert worker_threads and worker_threads[0] != threading.get_ident()
    assert worker_threads[0] not in collected_on
    assert not gc.isenabled()  # the UI thread's collector runs instead
