"""Opening a measurement off the UI thread: a large trace loads while the window keeps running,
with progress, a working Cancel and a clear message for a bad file."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, QTimer

from swimlanes.timeline.formats import io as timeline_io
from swimlanes.timeline.formats.io import TraceCancelled
from swimlanes.timeline.synthetic import write_kineto_trace
from swimlanes.ui import dialogs
from swimlanes.ui.app import create_application
from swimlanes.ui.main_window import MainWindow
from swimlanes.ui.settings import Settings
from swimlanes.ui.workers import TaskRunner

TRACE_EVENTS = 200_000
STREAMS = 8


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory) -> tuple[Path, int]:
    path = tmp_path_factory.mktemp("traces") / "big.trace.json"
    return path, write_kineto_trace(path, TRACE_EVENTS, streams=STREAMS)


@pytest.fixture
def win(qtbot, tmp_path) -> MainWindow:
    create_application()
    settings = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings, gpu_available=False, autosave_path=tmp_path / "recovery.json")
    qtbot.addWidget(window, before_close_func=lambda w: w.controller.undo_stack.setClean())
    window.show()
    qtbot.waitExposed(window)
    return window


@pytest.fixture
def errors(monkeypatch) -> list[tuple[str, str]]:
    """Message boxes shown, as (title, text)."""
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(
        dialogs, "show_error", lambda parent, title, text: shown.append((title, text))
    )
    return shown


class PausedLoad:
    """Wraps the loader so that the worker pauses at its first progress report until the
    test lets it go (the test acts mid-load, however fast the machine), and records how each
    load ended, as seen in the worker thread."""

    def __init__(self, monkeypatch) -> None:
        self.reached = threading.Event()
        self.go = threading.Event()
        self.outcomes: list[str] = []
        real = timeline_io.load_timeline_any

        def load(path, *, progress=None, cancel=None, **kwargs):
            def paused_progress(fraction: float) -> None:
                if not self.reached.is_set():
                    self.reached.set()
                    self.go.wait(10)
                progress(fraction)

            try:
                result = real(path, progress=paused_progress, cancel=cancel, **kwargs)
            except TraceCancelled:
                self.outcomes.append("cancelled")
                raise
            self.outcomes.append("loaded")
            return result

        monkeypatch.setattr(timeline_io, "load_timeline_any", load)


def test_a_large_trace_loads_while_the_window_keeps_running(qtbot, win, big_trace) -> None:
    path, ops = big_trace
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    fractions: list[float] = []
    win.measurement_task.progress.connect(fractions.append)
    done: list[float] = []
    win.measurement_task.finished.connect(lambda _r: done.append(time.monotonic()))
    timer.start()
    started = time.monotonic()
    assert win.open_measurement(str(path))
    # open_measurement returned at once: the file is loading in the worker
    assert win.is_loading_measurement() and win.measured is None
    assert win.load_progress.isVisible()
    assert "big.trace.json" in win.load_progress.bar.format()
    qtbot.waitUntil(lambda: not win.is_loading_measurement(), timeout=20000)
    timer.stop()
    during = [t for t in ticks if started < t < done[0]]
    # the event loop kept turning through the load (about 100 per second with a 10 ms timer)
    assert len(during) >= 5, (len(during), done[0] - started)
    assert fractions and fractions == sorted(fractions) and 0 < fractions[0] < 1
    assert win.measured is not None and len(win.measured) == ops
    assert win.charts.measured() is win.measured
    assert not win.load_progress.isVisible()
    assert "Opened measurement big.trace.json" in win.statusBar().currentMessage()


def test_cancel_stops_the_load_and_keeps_the_window_as_it_was(
    qtbot, win, big_trace, errors, monkeypatch
) -> None:
    paused = PausedLoad(monkeypatch)
    path, _ops = big_trace
    assert win.open_measurement(str(path))
    qtbot.waitUntil(paused.reached.is_set, timeout=10000)
    win.load_progress.cancel_button.click()
    paused.go.set()
    assert not win.is_loading_measurement()
    assert not win.load_progress.isVisible()
    assert "Stopped loading big.trace.json" in win.statusBar().currentMessage()
    qtbot.waitUntil(lambda: paused.outcomes != [], timeout=10000)
    qtbot.wait(50)  # anything the worker still sent is delivered (and dropped)
    assert paused.outcomes == ["cancelled"]  # the worker itself stopped, not only the window
    assert win.measured is None and errors == []


def test_a_malformed_trace_shows_what_is_wrong(qtbot, win, errors, tmp_path) -> None:
    bad = tmp_path / "cut.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "k", "ts": 1', encoding="utf-8")
    assert win.open_measurement(str(bad))
    qtbot.waitUntil(lambda: not win.is_loading_measurement(), timeout=5000)
    assert len(errors) == 1
    title, text = errors[0]
    assert title == "Cannot open measurement"
    assert text.startswith("cut.json: ") and "truncated" in text
    assert win.measured is None and not win.load_progress.isVisible()


def test_a_bug_in_a_reader_is_reported_not_raised(qtbot, win, errors, monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise RuntimeError("reader bug")

    monkeypatch.setattr(timeline_io, "load_timeline_any", broken)
    assert win.open_measurement(str(tmp_path / "any.json"))
    qtbot.waitUntil(lambda: not win.is_loading_measurement(), timeout=5000)
    assert errors == [("Cannot open measurement", "any.json: unexpected RuntimeError: reader bug")]


def test_opening_another_document_cancels_the_load(qtbot, win, big_trace, monkeypatch) -> None:
    paused = PausedLoad(monkeypatch)
    path, _ops = big_trace
    assert win.open_measurement(str(path))
    qtbot.waitUntil(paused.reached.is_set, timeout=10000)
    assert win.open_example("two-streams")
    assert not win.is_loading_measurement()
    paused.go.set()
    qtbot.waitUntil(lambda: paused.outcomes != [], timeout=10000)
    qtbot.wait(50)
    assert paused.outcomes == ["cancelled"] and win.measured is None


def test_a_newer_task_replaces_a_running_one(qtbot) -> None:
    runner = TaskRunner()
    release = threading.Event()
    seen_cancel: list[bool] = []

    def slow(progress, cancel):
        release.wait(5)
        seen_cancel.append(cancel())
        return "old"

    results: list[object] = []
    runner.finished.connect(results.append)
    runner.start(slow)
    runner.start(lambda progress, cancel: "new")
    release.set()
    qtbot.waitUntil(lambda: results != [], timeout=5000)
    runner.shutdown()
    qtbot.wait(20)
    assert results == ["new"] and seen_cancel == [True]
    assert not runner.is_busy()
