"""Pipeline files: clear load errors, atomic saves, lossless round trips."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from swimlanes.model import (
    Op,
    Pipeline,
    PipelineError,
    Stream,
    load_pipeline,
    pipeline_from_json,
    pipeline_to_json,
    save_pipeline,
)
from swimlanes.model import io as model_io

DOC: dict[str, Any] = {
    "format": "swimlanes-pipeline",
    "version": 1,
    "name": "round trip",
    "streams": [
        {"name": "s1", "kind": "blocking", "priority": 0, "color": "#336699"},
        {"name": "s2", "kind": "non_blocking", "priority": -3},
    ],
    "program": [
        {"op": "h2d", "stream": "s1", "bytes": 67108864, "host_memory": "pinned", "async": True},
        {"op": "kernel", "stream": "s1", "label": "K0", "blocks": 4096, "threads": 256,
         "duration_us": 370, "note": {"why": "kept"}},
        {"op": "d2h", "stream": "s1", "bytes": 67108864, "host_memory": "pageable",
         "async": False},
        {"op": "event_record", "stream": "s1", "event": "e0"},
        {"op": "event_wait", "stream": "s2", "event": "e0"},
        {"op": "kernel", "stream": "s2", "blocks": 2, "threads": 64, "flops": 1e9,
         "bytes": 1024},
        {"op": "memset", "bytes": 4096, "async": False},
        {"op": "stream_sync", "stream": "s1"},
        {"op": "event_sync", "event": "e0"},
        {"op": "device_sync"},
        {"op": "host", "duration_us": 0},
        {"op": "host_func", "stream": "s2", "duration_us": 12.5},
        {"op": "malloc", "bytes": 1048576},
        {"op": "free"},
    ],
    "description": "unknown top-level keys survive",
    "layout": {"zoom": 2.5},
}  # fmt: skip


def test_load_save_load_is_lossless_and_keeps_unknown_keys(tmp_path: Path) -> None:
    src = tmp_path / "in.json"
    src.write_text(json.dumps(DOC), encoding="utf-8")
    first = load_pipeline(src)
    out = tmp_path / "out.json"
    save_pipeline(first, out)
    second = load_pipeline(out)
    assert second == first
    assert json.loads(out.read_text(encoding="utf-8")) == DOC
    assert first.extra == {"description": "unknown top-level keys survive", "layout": {"zoom": 2.5}}
    assert first.streams[0].extra == {"color": "#336699"}
    assert first.program[1].extra == {"note": {"why": "kept"}}


def test_absent_fields_stay_absent_after_saving() -> None:
    text = pipeline_to_json(pipeline_from_json(json.dumps(DOC)))
    saved_d2h = json.loads(text)["program"][2]
    saved_free = json.loads(text)["program"][-1]
    assert "label" not in saved_d2h and "duration_us" not in saved_d2h
    assert saved_free == {"op": "free"}


def test_invalid_json_names_line_and_column() -> None:
    with pytest.raises(PipelineError) as info:
        pipeline_from_json('{\n  "format": "swimlanes-pipeline",\n  "version": 1,,\n}')
    assert str(info.value) == (
        "not valid JSON: Expecting property name enclosed in double quotes at line 3, column 16"
    )


def test_empty_file_is_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("", encoding="utf-8")
    with pytest.raises(PipelineError, match=r"^not valid JSON: Expecting value at line 1"):
        load_pipeline(path)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PipelineError, match=r"^no such file: .*nothere\.json$"):
        load_pipeline(tmp_path / "nothere.json")


def test_binary_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PipelineError, match=r"binary\.json is not a pipeline file \(UTF-16 text"):
        load_pipeline(path)
    path.write_bytes(b'{"name": "\xc0\xaf"}')
    with pytest.raises(PipelineError, match=r"not a pipeline file \(binary data, not UTF-8"):
        load_pipeline(path)


def test_huge_file_is_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(DOC), encoding="utf-8")
    monkeypatch.setattr(model_io, "MAX_PIPELINE_FILE_BYTES", 100)
    with pytest.raises(PipelineError, match=r"big\.json is \d+ bytes: too large for a pipeline"):
        load_pipeline(path)


def _leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def test_failed_save_leaves_the_original_intact_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "doc.json"
    original = pipeline_from_json(json.dumps(DOC))
    save_pipeline(original, path)
    before = path.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    edited = original.copy()
    edited.program.append(Op("device_sync"))
    with pytest.raises(OSError, match="No space left"):
        save_pipeline(edited, path)
    assert path.read_bytes() == before
    assert _leftovers(tmp_path, {"doc.json"}) == []


def test_failed_first_save_creates_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PermissionError):
        save_pipeline(Pipeline("x"), tmp_path / "new.json")
    assert _leftovers(tmp_path, set()) == []


def test_unserialisable_extra_does_not_touch_the_file(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    save_pipeline(Pipeline("ok"), path)
    before = path.read_bytes()
    bad = Pipeline("bad", extra={"when": object()})
    with pytest.raises(TypeError):
        save_pipeline(bad, path)
    assert path.read_bytes() == before
    assert _leftovers(tmp_path, {"doc.json"}) == []


def test_saved_file_is_complete_json_with_header(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    save_pipeline(Pipeline("p", [Stream("s1")], [Op("d2h", stream="s1", bytes=8)]), path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["format"], data["version"], data["name"]) == ("swimlanes-pipeline", 1, "p")
    assert data["program"] == [{"op": "d2h", "stream": "s1", "bytes": 8}]


def test_copy_of_loaded_pipeline_is_independent() -> None:
    first = pipeline_from_json(json.dumps(DOC))
    second = first.copy()
    second.program[1].extra["note"] = "changed"
    second.extra["layout"] = {}
    assert first.program[1].extra == {"note": {"why": "kept"}}
    assert first.extra["layout"] == {"zoom": 2.5}
    assert [op.uid for op in second.program] == [op.uid for op in first.program]
    assert copy.deepcopy(DOC)["program"][0]["bytes"] == first.program[0].bytes


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_save_keeps_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    path.write_text("{}", encoding="utf-8")
    path.chmod(0o644)
    save_pipeline(Pipeline("p"), path)
    assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        path = tmp_path / "new.json"
        save_pipeline(Pipeline("p"), path)
        assert path.stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(umask)


def test_half_a_surrogate_pair_is_refused_with_where_it_is(tmp_path: Path) -> None:
    """A \\uD800 escape without its other half is not text: printing the table or writing the
    label as UTF-8 would fail later, so the file is refused with the field that holds it. A
    whole pair (an emoji written as two escapes) is text."""
    head = '{"format": "swimlanes-pipeline", "version": 1, "name": "x", "program": ['
    kernel = '{"op": "kernel", "blocks": 1, "threads": 32, "duration_us": 5, "label": "%s"}'
    bad = tmp_path / "bad.json"
    bad.write_text(head + kernel % "ok" + ", " + kernel % "a\\ud800b" + "]}", "utf-8")
    with pytest.raises(PipelineError) as err:
        load_pipeline(bad)
    assert [p.path for p in err.value.problems] == ["program[1].label"]
    assert "surrogate" in str(err.value)
    good = tmp_path / "good.json"
    good.write_text(head + kernel % "\\ud83d\\ude00" + "]}", "utf-8")
    assert load_pipeline(good).program[0].label == "\U0001f600"
