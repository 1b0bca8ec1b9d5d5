"""File > Open trace as pipeline: a profiler trace becomes the document, its measurement beside
the simulation of the rebuilt pipeline, op for op."""

from __future__ import annotations

import pytest
from test_main_window import make_window

from conftest import SHARED_TRACES
from swimlanes.ui import dialogs
from swimlanes.ui.app import open_initial

EVENT_SYNC = SHARED_TRACES / "kineto-a100-event-sync.json.gz"


@pytest.mark.skipif(not EVENT_SYNC.exists(), reason=f"shared traces not found in {SHARED_TRACES}")
def test_a_trace_opens_as_the_document_beside_its_measurement(qtbot, tmp_path) -> None:
    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    assert win.open_trace_as_pipeline(str(EVENT_SYNC))
    qtbot.waitUntil(lambda: not win.is_loading_measurement(), timeout=20_000)
    program = win.controller.pipeline.program
    assert win.controller.pipeline.name.startswith("kineto-a100-event-sync")
    assert sum(op.op == "kernel" for op in program) == 4
    assert win.measured is not None and win.measured.device.startswith("NVIDIA A100")
    qtbot.waitUntil(lambda: win.simulated is not None and len(win.simulated) == len(program))
    assert win.comparison is not None  # the measurement lines up with the rebuilt ops
    assert "Rebuilt" in win.statusBar().currentMessage()


def test_a_file_that_is_no_trace_says_so_and_keeps_the_document(
    qtbot, tmp_path, monkeypatch
) -> None:
    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    before = win.controller.pipeline.to_dict()
    shown: list[str] = []
    monkeypatch.setattr(dialogs, "show_error", lambda _w, title, text: shown.append(text))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert win.open_trace_as_pipeline(str(bad))
    qtbot.waitUntil(lambda: not win.is_loading_measurement(), timeout=10_000)
    assert shown and "bad.json" in shown[0]
    assert win.controller.pipeline.to_dict() == before


def test_the_captured_lessons_are_in_the_examples_menu_with_their_measurement(
    qtbot, tmp_path
) -> None:
    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    texts = [a.text() for a in win.menus.examples.actions()]
    assert "Captured programs" in texts
    entry = next(a for a in win.menus.examples.actions() if "(captured-cupy-streams)" in a.text())
    entry.trigger()
    assert win.example_name == "captured-cupy-streams"
    assert [p.name for p in win.shipped_measurements()] == ["captured-cupy-streams.h200.json"]
    # A captured program opens with its measurement beside the simulation, op for op.
    qtbot.waitUntil(lambda: not win.is_loading_measurement(), timeout=20_000)
    assert win.measured is not None and win.measured.device == "NVIDIA H200"
    qtbot.waitUntil(lambda: win.comparison is not None, timeout=20_000)


def test_a_lesson_that_is_no_capture_opens_without_its_measurement(qtbot, tmp_path) -> None:
    """A hand-made lesson opens as a design to simulate; its measurement is a menu away."""
    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    assert win.open_example("two-streams")
    assert win.shipped_measurements() and not win.is_loading_measurement()
    assert win.measured is None
    assert "File > Shipped measurements" in win.statusBar().currentMessage()


def test_a_shipped_capture_opened_by_its_path_gets_its_measurement(qtbot, tmp_path) -> None:
    """From recent files or the command line: the file, its measurement beside it."""
    from swimlanes.resources import example_path

    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    assert win.open_document(str(example_path("captured-cupy-streams")))
    assert win.example_name == "captured-cupy-streams"
    assert str(win.controller.path) == str(example_path("captured-cupy-streams"))
    assert [p.name for p in win.shipped_measurements()] == ["captured-cupy-streams.h200.json"]
    qtbot.waitUntil(lambda: not win.is_loading_measurement(), timeout=20_000)
    assert win.measured is not None and win.measured.device == "NVIDIA H200"
    # A copy elsewhere is an ordinary document.
    copy = tmp_path / "captured-cupy-streams.json"
    copy.write_bytes(example_path("captured-cupy-streams").read_bytes())
    assert win.open_document(str(copy))
    assert win.example_name is None and str(win.controller.path) == str(copy)
