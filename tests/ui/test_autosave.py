"""Crash recovery: the dirty document is autosaved and can be restored; clean saves remove it."""

from __future__ import annotations

import json

import pytest

from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.model.edits import InsertOps
from swimlanes.model.validate import PipelineError
from swimlanes.ui.autosave import Autosaver, has_recovery, read_recovery, write_recovery
from swimlanes.ui.document_controller import DocumentController


def _controller() -> DocumentController:
    c = DocumentController()
    c.set_pipeline(Pipeline(name="work", streams=[Stream("s1")]))
    return c


def _edit(c: DocumentController) -> None:
    assert c.push(InsertOps(0, [Op("h2d", stream="s1", bytes=4096, label="H2D mine")]))


def test_nothing_is_written_while_the_document_is_clean(qtbot, tmp_path) -> None:
    c = _controller()
    saver = Autosaver(c, path=tmp_path / "recovery.json", interval_ms=10)
    qtbot.wait(60)
    assert not saver.save_now()
    assert not has_recovery(saver.path)


def test_dirty_document_is_autosaved_on_the_timer_and_restorable(qtbot, tmp_path) -> None:
    c = _controller()
    c.path = tmp_path / "work.json"
    saver = Autosaver(c, path=tmp_path / "recovery.json", interval_ms=20)
    _edit(c)
    qtbot.waitUntil(lambda: has_recovery(saver.path), timeout=2000)
    pipeline, original, saved_at = read_recovery(saver.path)
    assert [op.label for op in pipeline.program] == ["H2D mine"]
    assert original == str(tmp_path / "work.json") and saved_at


def test_clean_save_removes_the_recovery_file(qtbot, tmp_path) -> None:
    c = _controller()
    saver = Autosaver(c, path=tmp_path / "recovery.json", interval_ms=60_000)
    _edit(c)
    assert saver.save_now() and has_recovery(saver.path)
    c.save(tmp_path / "work.json")
    assert not has_recovery(saver.path)


def test_undo_back_to_the_saved_state_removes_it_too(qtbot, tmp_path) -> None:
    c = _controller()
    saver = Autosaver(c, path=tmp_path / "recovery.json", interval_ms=60_000)
    _edit(c)
    assert saver.save_now()
    c.undo_stack.undo()
    assert not has_recovery(saver.path)


def test_unreadable_recovery_file_gives_a_clear_error(tmp_path) -> None:
    path = tmp_path / "recovery.json"
    path.write_text("{ truncated", encoding="utf-8")
    with pytest.raises(PipelineError, match="cannot read the recovery file"):
        read_recovery(path)
    path.write_text(json.dumps({"format": "something-else"}), encoding="utf-8")
    with pytest.raises(PipelineError, match="not a Swimlanes recovery file"):
        read_recovery(path)


def test_recovery_round_trip_keeps_unknown_keys(tmp_path) -> None:
    p = Pipeline(
        name="x",
        streams=[Stream("s1")],
        program=[
            Op("kernel", stream="s1", blocks=2, threads=32, duration_us=5.0, extra={"note": "mine"})
        ],
        extra={"lesson": "L"},
    )
    write_recovery(p, None, tmp_path / "r.json")
    back, original, _ = read_recovery(tmp_path / "r.json")
    assert back.to_dict() == p.to_dict() and original is None


# -- soon after each edit, off the UI thread, failures shown ----------------------------------------
def test_an_edit_is_in_the_recovery_file_within_seconds_written_off_the_ui_thread(
    qtbot, tmp_path, monkeypatch
) -> None:
    import threading

    from swimlanes.ui import autosave

    threads: list[int] = []
    real_dump = autosave.dump_json_atomic

    def dump(data, path):
        threads.append(threading.get_ident())
        real_dump(data, path)

    monkeypatch.setattr(autosave, "dump_json_atomic", dump)
    c = _controller()
    saver = Autosaver(c, path=tmp_path / "recovery.json")  # the app's own delay
    _edit(c)
    qtbot.waitUntil(lambda: has_recovery(saver.path), timeout=autosave.AUTOSAVE_DELAY_MS + 3000)
    assert [op.label for op in read_recovery(saver.path)[0].program] == ["H2D mine"]
    assert threads and threading.get_ident() not in threads


def test_a_failing_autosave_is_reported_and_retried(qtbot, tmp_path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", encoding="utf-8")
    c = _controller()
    saver = Autosaver(c, path=blocker / "recovery.json", interval_ms=20)
    with qtbot.waitSignal(saver.failed, timeout=3000) as failure:
        _edit(c)
    assert "not-a-folder" in failure.args[0] or failure.args[0]
    assert saver.last_error
    blocker.unlink()  # room again: the retry writes it
    saver.save_soon_now()
    qtbot.waitUntil(lambda: has_recovery(saver.path), timeout=3000)
    assert saver.last_error is None


def test_a_save_during_a_slow_autosave_leaves_no_recovery_file(
    qtbot, tmp_path, monkeypatch
) -> None:
    import threading

    from swimlanes.ui import autosave

    writing, finish = threading.Event(), threading.Event()
    real_dump = autosave.dump_json_atomic

    def slow_dump(data, path):
        writing.set()
        finish.wait(5)
        real_dump(data, path)

    monkeypatch.setattr(autosave, "dump_json_atomic", slow_dump)
    c = _controller()
    saver = Autosaver(c, path=tmp_path / "recovery.json", interval_ms=10)
    _edit(c)
    qtbot.waitUntil(writing.is_set, timeout=3000)
    finish.set()  # the write may land just before or after the save: neither leaves a file
    c.save(tmp_path / "work.json")
    qtbot.waitUntil(lambda: not saver.is_writing(), timeout=3000)
    saver.stop()
    assert not has_recovery(saver.path)


def test_edits_made_seconds_before_a_kill_are_recovered(tmp_path) -> None:
    """The app is killed (SIGKILL) three seconds after an edit: its recovery file has it."""
    import os
    import subprocess
    import sys
    import textwrap

    recovery = tmp_path / "recovery.json"
    code = f"""
        import os, signal, time
        from PySide6.QtCore import QSettings
        from swimlanes.ui.app import create_application
        from swimlanes.ui.main_window import MainWindow
        from swimlanes.ui.settings import Settings
        from swimlanes.model.document import Op
        from swimlanes.model.edits import InsertOps
        app = create_application()
        settings = Settings(QSettings({str(tmp_path / "s.ini")!r}, QSettings.Format.IniFormat))
        win = MainWindow(settings, gpu_available=False, autosave_path=__import__("pathlib").Path({str(recovery)!r}))
        win.open_example("two-streams")
        op = Op("kernel", stream="default", label="K killed", blocks=1, threads=32, duration_us=5.0)
        win.controller.push(InsertOps(0, [op]))
        end = time.monotonic() + 3.5
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip
    assert out.returncode == -9, out.stderr[-2000:]
    pipeline, _original, _saved_at = read_recovery(recovery)
    assert pipeline.program[0].label == "K killed"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".recovery")]  # no temp left


def test_a_hostile_recovery_file_is_refused_cleanly(tmp_path) -> None:
    """Read at start-up: the pipeline files' limits apply (no RecursionError, no huge ints)."""
    path = tmp_path / "recovery.json"
    path.write_text('{"format": "swimlanes-recovery", "x": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(PipelineError, match="cannot read the recovery file: .*nested deeper"):
        read_recovery(path)
