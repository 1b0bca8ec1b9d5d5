"""Loading validation: every rule reports the JSON path of the problem and a readable reason."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from swimlanes.model import PipelineError, pipeline_from_dict, validate
from swimlanes.model.document import Op

BASE: dict[str, Any] = {
    "format": "swimlanes-pipeline",
    "version": 1,
    "name": "base",
    "streams": [{"name": "s1", "kind": "blocking", "priority": 0}],
    "program": [
        {"op": "h2d", "stream": "s1", "bytes": 1024, "host_memory": "pinned", "async": True},
        {"op": "kernel", "stream": "s1", "blocks": 4, "threads": 256, "duration_us": 10},
        {"op": "d2h", "stream": "s1", "bytes": 1024},
        {"op": "event_record", "stream": "s1", "event": "e0"},
        {"op": "host", "duration_us": 5},
    ],
}


def _doc(**changes: Any) -> dict[str, Any]:
    """BASE with top-level keys replaced; ``op_N`` replaces program[N], ``stream_N`` streams[N]."""
    doc = copy.deepcopy(BASE)
    for key, value in changes.items():
        if key.startswith("op_"):
            doc["program"][int(key[3:])] = value
        elif key.startswith("stream_"):
            doc["streams"][int(key[7:])] = value
        else:
            doc[key] = value
    return doc


def _problems(doc: Any) -> list[str]:
    with pytest.raises(PipelineError) as info:
        pipeline_from_dict(doc)
    return [str(p) for p in info.value.problems]


def test_base_document_is_valid() -> None:
    pipeline = pipeline_from_dict(copy.deepcopy(BASE))
    assert [op.op for op in pipeline.program] == ["h2d", "kernel", "d2h", "event_record", "host"]
    assert validate(pipeline) == []


K = {"op": "kernel", "stream": "s1", "blocks": 4, "threads": 256}

CASES = [
    # (document changes, the exact problem expected among those reported)
    ({"format": "something-else"}, "format: must be 'swimlanes-pipeline' (got 'something-else')"),
    ({"name": 7}, "name: must be a string"),
    ({"streams": {"s1": {}}}, "streams: must be a list"),
    ({"program": None}, "program: is required (a list of ops)"),
    ({"stream_0": "s1"}, "streams[0]: must be an object"),
    ({"stream_0": {"kind": "blocking"}}, "streams[0].name: is required (a non-empty string)"),
    ({"stream_0": {"name": "  "}}, "streams[0].name: must be a non-empty string"),
    (
        {"stream_0": {"name": "s1", "kind": "fast"}},
        "streams[0].kind: must be one of legacy_default, per_thread_default, blocking, "
        "non_blocking (got 'fast')",
    ),
    (
        {"stream_0": {"name": "s1", "priority": 1.5}},
        "streams[0].priority: must be an integer (lower is higher priority)",
    ),
    (
        {"stream_0": {"name": "s1", "priority": True}},
        "streams[0].priority: must be an integer (lower is higher priority)",
    ),
    (
        {"stream_0": {"name": "default", "kind": "blocking"}},
        "streams[0].name: 'default' is the legacy default stream's name",
    ),
    (
        {"stream_0": {"name": "s0", "kind": "legacy_default"}},
        "streams[0].kind: the legacy default stream must be named 'default'",
    ),
    (
        {"streams": [{"name": "s1"}, {"name": "s1", "kind": "non_blocking"}]},
        "streams[1].name: duplicate stream name 's1'",
    ),
    ({"op_1": 3}, "program[1]: must be an object"),
    ({"op_1": {"op": "launch"}}, "program[1].op: must be one of h2d, d2h, d2d, memset, kernel, "),
    ({"op_0": {"op": "h2d", "stream": "s1"}}, "program[0].bytes: is required (a positive integer)"),
    ({"op_0": {"op": "h2d", "bytes": 0}}, "program[0].bytes: must be a positive integer"),
    ({"op_0": {"op": "h2d", "bytes": 1.5}}, "program[0].bytes: must be a positive integer"),
    ({"op_0": {"op": "h2d", "bytes": "1024"}}, "program[0].bytes: must be a positive integer"),
    ({"op_0": {"op": "memset", "stream": "s1"}}, "program[0].bytes: is required (a positive"),
    ({"op_0": {"op": "d2h", "bytes": 8, "label": 5}}, "program[0].label: must be a string"),
    ({"op_0": {"op": "d2h", "bytes": 8, "stream": "s9"}}, "program[0].stream: names no declared"),
    ({"op_0": {"op": "d2h", "bytes": 8, "stream": ""}}, "program[0].stream: must be a non-empty"),
    ({"op_0": {"op": "device_sync", "stream": "s1"}}, "program[0].stream: a device_sync op takes"),
    ({"op_0": {"op": "host", "duration_us": 1, "stream": "s1"}}, "program[0].stream: a host op"),
    (
        {"op_0": {"op": "d2d", "bytes": 8, "host_memory": "pinned"}},
        "program[0].host_memory: only h2d and d2h copies touch host memory",
    ),
    (
        {"op_0": {"op": "h2d", "bytes": 8, "host_memory": "locked"}},
        "program[0].host_memory: must be 'pinned' or 'pageable'",
    ),
    (
        {"op_0": {"op": "h2d", "bytes": 8, "async": "yes"}},
        "program[0].async: must be true or false",
    ),
    (
        {"op_1": {**K, "duration_us": 1, "async": False}},
        "program[1].async: only copies and memsets can be synchronous or asynchronous",
    ),
    ({"op_0": {"op": "h2d", "bytes": 8, "duration_us": 0}}, "program[0].duration_us: must be a"),
    (
        {"op_0": {"op": "h2d", "bytes": 8, "duration_us": float("nan")}},
        "program[0].duration_us: must be a positive number",
    ),
    ({"op_4": {"op": "host", "duration_us": -1}}, "program[4].duration_us: must be a number >= 0"),
    ({"op_4": {"op": "host"}}, "program[4].duration_us: is required for host work (a number >= 0)"),
    ({"op_1": {**K, "blocks": 0, "duration_us": 1}}, "program[1].blocks: must be a positive"),
    (
        {"op_1": {"op": "kernel", "threads": 32, "duration_us": 1}},
        "program[1].blocks: is required (a positive integer)",
    ),
    (
        {"op_1": {**K, "threads": 2048, "duration_us": 1}},
        "program[1].threads: must be at most 1024",
    ),
    ({"op_1": {**K, "block_us": -2}}, "program[1].block_us: must be a positive number"),
    ({"op_1": {**K, "flops": 0, "bytes": 8}}, "program[1].flops: must be a positive number"),
    ({"op_1": dict(K)}, "program[1]: a kernel needs exactly one of block_us, duration_us, or "),
    ({"op_1": {**K, "block_us": 1, "duration_us": 2}}, "program[1]: a kernel needs exactly one"),
    ({"op_1": {**K, "duration_us": 1, "flops": 9}}, "program[1]: a kernel needs exactly one"),
    (
        {"op_3": {"op": "event_record", "stream": "s1"}},
        "program[3].event: is required (a non-empty",
    ),
    ({"op_3": {"op": "event_sync", "event": ""}}, "program[3].event: must be a non-empty string"),
    ({"op_3": {"op": "stream_sync", "event": "e0"}}, "program[3].event: a stream_sync op takes no"),
    ({"op_0": {"op": "h2d", "bytes": 8, "blocks": 3}}, "program[0].blocks: only kernels take this"),
    (
        {"op_4": {"op": "host", "duration_us": 1, "block_us": 3}},
        "program[4].block_us: only kernels",
    ),
]


@pytest.mark.parametrize(("changes", "expected"), CASES, ids=[c[1][:48] for c in CASES])
def test_each_rule_reports_its_json_path(changes: dict[str, Any], expected: str) -> None:
    problems = _problems(_doc(**changes))
    assert any(p.startswith(expected) for p in problems), problems


def test_every_problem_is_reported_at_once() -> None:
    doc = _doc(op_0={"op": "h2d", "bytes": -1}, op_2={"op": "d2h", "bytes": 8, "stream": "nope"})
    problems = _problems(doc)
    assert "program[0].bytes: must be a positive integer" in problems
    assert "program[2].stream: names no declared stream ('nope')" in problems


def test_not_an_object_is_refused() -> None:
    assert _problems([1, 2]) == ["a pipeline file must hold a JSON object"]


@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_unknown_version_is_refused_clearly(version: Any) -> None:
    problems = _problems(_doc(version=version))
    assert problems[-1] == (
        f"version: unsupported version {version!r}: this Swimlanes reads version 1"
    )
    # A newer file is not half-read: the version problem is the reason given, not its fields.
    assert len(problems) == 1


def test_ops_may_name_the_default_stream_without_declaring_it() -> None:
    pipeline = pipeline_from_dict(_doc(op_2={"op": "d2h", "bytes": 8, "stream": "default"}))
    assert pipeline.program[2].stream_name == "default"


def test_validate_rechecks_an_edited_pipeline() -> None:
    pipeline = pipeline_from_dict(copy.deepcopy(BASE))
    pipeline.program[0].bytes = -5
    pipeline.program.append(Op("event_wait", stream="ghost", event="e0"))
    assert [str(p) for p in validate(pipeline)] == [
        "program[0].bytes: must be a positive integer",
        "program[5].stream: names no declared stream ('ghost')",
    ]
