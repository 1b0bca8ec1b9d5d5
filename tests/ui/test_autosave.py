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
