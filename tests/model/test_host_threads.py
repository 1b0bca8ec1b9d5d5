"""Host threads in the pipeline format: the ``host_threads`` list, the ``host_thread`` key of
streams and ops, CUDA's per-thread default stream rules, and the undoable thread edits."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

from swimlanes.model import PipelineError, pipeline_from_dict
from swimlanes.model.edits import (
    AddHostThread,
    EditError,
    RemoveHostThread,
    RenameHostThread,
    SetOpHostThread,
    SetStreamHostThread,
)
from swimlanes.model.io import pipeline_to_json
from swimlanes.model.schema import pipeline_schema

KERNEL = {"op": "kernel", "blocks": 132, "threads": 256, "duration_us": 100}

DOC: dict[str, Any] = {
    "format": "swimlanes-pipeline",
    "version": 1,
    "name": "two threads",
    "host_threads": [{"name": "main"}, {"name": "worker"}],
    "streams": [
        {"name": "ptds_main", "kind": "per_thread_default", "priority": 0, "host_thread": "main"},
        {
            "name": "ptds_worker",
            "kind": "per_thread_default",
            "priority": 0,
            "host_thread": "worker",
        },
    ],  # fmt: skip
    "program": [
        {**KERNEL, "stream": "ptds_main"},
        {**KERNEL, "stream": "ptds_worker"},
        {**KERNEL, "host_thread": "worker"},
        {"op": "stream_sync", "stream": "ptds_main"},
        {"op": "host", "duration_us": 10, "host_thread": "worker"},
    ],
}


def _problems(doc: dict[str, Any]) -> list[str]:
    try:
        pipeline_from_dict(copy.deepcopy(doc))
    except PipelineError as err:
        return [str(p) for p in err.problems]
    return []


def test_threads_load_and_save_as_written() -> None:
    p = pipeline_from_dict(copy.deepcopy(DOC))
    assert p.thread_list() == [("main", "gpu0"), ("worker", "gpu0")]
    assert p.is_multi_thread
    # An op is issued by its own thread, else its stream's, else its device's first.
    assert [p.op_thread(op) for op in p.program] == ["main", "worker", "worker", "main", "worker"]
    assert p.to_dict() == DOC


def test_a_file_without_threads_has_one_per_device_named_after_it() -> None:
    doc = {"format": "swimlanes-pipeline", "version": 1, "devices": [{"name": "a"}, {"name": "b"}],
           "streams": [{"name": "s", "device": "b"}], "program": [{**KERNEL, "stream": "s"}]}  # fmt: skip
    p = pipeline_from_dict(doc)
    assert p.thread_list() == [("a", "a"), ("b", "b")]
    assert not p.is_multi_thread and p.op_thread(p.program[0]) == "b"
    assert "host_threads" not in pipeline_to_json(p)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["program"].append({**KERNEL, "stream": "ptds_main", "host_thread": "worker"}),
         "program[5].host_thread: stream 'ptds_main' is host thread 'main''s per-thread default "
         "stream: 'worker' cannot issue on it"),
        (lambda d: d["program"].append({"op": "host", "duration_us": 1, "host_thread": "nobody"}),
         "program[5].host_thread: names no declared host thread ('nobody')"),
        (lambda d: d["streams"].append({"name": "x", "kind": "per_thread_default",
                                        "host_thread": "main"}),
         "streams[2].host_thread: host thread 'main' already has a per-thread default stream"),
        (lambda d: d["streams"].append({"name": "default", "kind": "legacy_default",
                                        "host_thread": "main"}),
         "streams[2].host_thread: the legacy default stream is shared by every thread"),
        (lambda d: d["host_threads"].append({"name": "gpu0"}),
         "host_threads[2].name: 'gpu0' is a device's name"),
        (lambda d: d["host_threads"].append({"name": "main"}),
         "host_threads[2].name: duplicate host thread name 'main'"),
        (lambda d: d["host_threads"].append({"name": "t", "device": "gpu7"}),
         "host_threads[2].device: names no declared device ('gpu7')"),
        (lambda d: d.update(host_threads=[]), "host_threads: must be a non-empty list"),
    ],
)  # fmt: skip
def test_bad_threads_are_refused_naming_the_place(change: Any, expected: str) -> None:
    doc = copy.deepcopy(DOC)
    change(doc)
    problems = _problems(doc)
    assert any(p.startswith(expected) for p in problems), problems


def test_a_thread_issues_only_on_its_own_device() -> None:
    doc = copy.deepcopy(DOC)
    doc["devices"] = [{"name": "gpu0"}, {"name": "gpu1"}]
    doc["streams"].append({"name": "s1", "device": "gpu1"})
    doc["program"].append({**KERNEL, "stream": "s1", "host_thread": "worker"})
    assert _problems(doc) == [
        "program[5].host_thread: host thread 'worker' runs on gpu0, not on gpu1"
    ]


def test_the_schema_takes_threads_and_refuses_a_thread_on_the_legacy_stream() -> None:
    validator = jsonschema.Draft202012Validator(pipeline_schema())
    assert validator.is_valid(DOC)
    bad = copy.deepcopy(DOC)
    bad["streams"].append({"name": "default", "kind": "legacy_default", "host_thread": "main"})
    assert not validator.is_valid(bad)


def test_thread_edits_apply_and_undo() -> None:
    p = pipeline_from_dict(copy.deepcopy(DOC))
    before = p.to_dict()
    add = AddHostThread("loader")
    add.apply(p)
    assert [t.name for t in p.host_threads] == ["main", "worker", "loader"]
    move = SetOpHostThread([p.program[4].uid], "loader")
    move.apply(p)
    assert p.op_thread(p.program[4]) == "loader"
    with pytest.raises(EditError, match="used by 1 op"):
        RemoveHostThread("loader").apply(p)
    rename = RenameHostThread("loader", "io")
    rename.apply(p)
    assert p.program[4].host_thread == "io"
    for edit in (rename, move, add):
        edit.revert(p)
    assert p.to_dict() == before


def test_edits_that_break_the_rules_are_refused_and_leave_the_document() -> None:
    p = pipeline_from_dict(copy.deepcopy(DOC))
    before = p.to_dict()
    with pytest.raises(EditError, match="per-thread default stream"):
        SetOpHostThread([p.program[0].uid], "worker").apply(p)
    with pytest.raises(EditError, match="already has a per-thread default stream"):
        SetStreamHostThread("ptds_worker", "main").apply(p)
    with pytest.raises(EditError, match="already a host thread or device"):
        AddHostThread("gpu0").apply(p)
    assert p.to_dict() == before
