"""The pipeline file's JSON Schema: it accepts what Swimlanes writes and what the loader
takes, and refuses what the loader refuses (where JSON Schema can say it)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swimlanes.model import PipelineError, pipeline_from_dict, save_pipeline
from swimlanes.model.document import (
    MAX_BLOCKS,
    MAX_BYTES,
    MAX_DURATION_US,
    MAX_NAME_CHARS,
    MAX_PRIORITY,
    MAX_STREAMS,
    OP_KINDS,
)
from swimlanes.model.generators import EXAMPLE_BUILDERS, example_pipeline, random_pipeline
from swimlanes.model.schema import OP_KIND_FIELDS, pipeline_schema
from swimlanes.resources import examples_dir

VALIDATOR = jsonschema.Draft202012Validator(pipeline_schema())

DOC: dict[str, Any] = {
    "format": "swimlanes-pipeline",
    "version": 1,
    "name": "schema",
    "streams": [{"name": "s1", "kind": "blocking", "priority": 0}, {"name": "s2"}],
    "program": [
        {"op": "h2d", "stream": "s1", "bytes": 1024, "host_memory": "pageable", "async": True},
        {"op": "kernel", "stream": "s1", "blocks": 64, "threads": 256, "block_us": 2.5},
        {"op": "event_record", "stream": "s1", "event": "e0"},
        {"op": "event_wait", "stream": "s2", "event": "e0"},
        {"op": "memset", "stream": "s2", "bytes": 4096, "async": False},
        {"op": "host", "duration_us": 0},
        {"op": "device_sync"},
    ],
    "communicators": [{"name": "world", "devices": ["gpu0"]}],
}


def _schema_ok(doc: Any) -> bool:
    return VALIDATOR.is_valid(doc)


def _loader_ok(doc: Any) -> bool:
    try:
        pipeline_from_dict(copy.deepcopy(doc))
    except PipelineError:
        return False
    return True


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = pipeline_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(schema["$defs"]["op"]["properties"]["op"]["enum"]) == set(OP_KINDS)
    assert {f"op_{k}" for k in OP_KINDS} <= set(schema["$defs"])


@pytest.mark.parametrize("path", sorted(examples_dir().glob("*.json")), ids=lambda p: p.stem)
def test_every_shipped_example_is_valid(path: Path) -> None:
    errors = [e.message for e in VALIDATOR.iter_errors(json.loads(path.read_text()))]
    assert errors == []


@pytest.mark.parametrize("name", sorted(EXAMPLE_BUILDERS))
def test_saved_generated_pipelines_are_valid(name: str, tmp_path: Path) -> None:
    for pipeline in (example_pipeline(name), random_pipeline(300, 6, seed=len(name))):
        path = tmp_path / "saved.json"
        save_pipeline(pipeline, path)
        errors = [e.message for e in VALIDATOR.iter_errors(json.loads(path.read_text()))]
        assert errors == [], pipeline.name


def test_unknown_keys_are_allowed_where_the_loader_keeps_them() -> None:
    doc = copy.deepcopy(DOC)
    doc["$schema"] = "./pipeline.schema.json"
    doc["x_tool"] = {"layout": [1, 2]}
    doc["streams"][0]["color"] = "#336699"
    doc["program"][1]["note"] = {"why": "kept"}
    assert _loader_ok(doc)
    assert _schema_ok(doc)


def _edited(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """``base`` (DOC) with the key at ``path`` (``program.1.threads``) set to ``value``
    (``...`` deletes)."""
    doc = copy.deepcopy(DOC if base is None else base)
    *parents, last = path.split(".")
    target: Any = doc
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    key: Any = int(last) if isinstance(target, list) else last
    if value is ...:
        del target[key]
    else:
        target[key] = value
    return doc


INVALID: dict[str, tuple[str, Any]] = {
    "another format": ("format", "swimlanes-run"),
    "version 2": ("version", 2),
    "no program": ("program", ...),
    "a long name": ("name", "x" * (MAX_NAME_CHARS + 1)),
    "an unknown op": ("program.6.op", "cudaLaunchCooperativeKernel"),
    "a copy without bytes": ("program.0.bytes", ...),
    "zero bytes": ("program.0.bytes", 0),
    "more than 1 TiB": ("program.0.bytes", MAX_BYTES + 1),
    "bytes as text": ("program.0.bytes", "1024"),
    "unknown host memory": ("program.0.host_memory", "managed"),
    "async as text": ("program.0.async", "yes"),
    "1025 threads": ("program.1.threads", 1025),
    "too many blocks": ("program.1.blocks", MAX_BLOCKS + 1),
    "a kernel without threads": ("program.1.threads", ...),
    "two kernel timings": ("program.1.duration_us", 10),
    "no kernel timing": ("program.1.block_us", ...),
    "an op taking too long": ("program.1.block_us", MAX_DURATION_US * 2),
    "an event on a kernel": ("program.1.event", "e0"),
    "an event op without event": ("program.2.event", ...),
    "a blank event name": ("program.3.event", "   "),
    "host memory on a memset": ("program.4.host_memory", "pinned"),
    "negative host work": ("program.5.duration_us", -1),
    "host work without a duration": ("program.5.duration_us", ...),
    "a stream on a device sync": ("program.6.stream", "s1"),
    "blocks on a memset": ("program.4.blocks", 4),
    "async on an event record": ("program.2.async", True),
    "an unknown stream kind": ("streams.0.kind", "graph"),
    "a stream without name": ("streams.0.name", ...),
    "a priority past a C int": ("streams.0.priority", MAX_PRIORITY + 1),
    "a priority as a float": ("streams.0.priority", 0.5),
    "a blocking stream named default": ("streams.1.name", "default"),
    "a legacy default stream named s2": ("streams.1.kind", "legacy_default"),
    "streams as an object": ("streams", {"s1": {}}),
    "too many streams": ("streams", [{"name": f"s{i}"} for i in range(MAX_STREAMS + 1)]),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_documents_are_refused_by_the_loader_and_the_schema(case: str) -> None:
    doc = _edited(*INVALID[case])
    assert not _loader_ok(doc), "the case should be one the loader refuses"
    assert not _schema_ok(doc)


def test_the_field_table_matches_the_documented_required_keys() -> None:
    required = {
        k: sorted(f for f, req in fields.items() if req) for k, fields in OP_KIND_FIELDS.items()
    }
    assert required["h2d"] == ["bytes"]
    assert required["kernel"] == ["blocks", "threads"]
    assert required["event_wait"] == ["event"]
    assert required["host"] == ["duration_us"]
    assert required["device_sync"] == []
    assert "stream" not in OP_KIND_FIELDS["event_sync"]
    assert "host_memory" not in OP_KIND_FIELDS["d2d"]


# -- the schema and the loader agree on single ops and streams --------------------------------
# A minimal valid op of each kind, then a few keys added, changed or removed. Values are valid
# and not, chosen so that nothing the schema cannot express decides the loader's verdict: the
# streams named are declared, and blocks * block_us stays far below the limit on block time.
_BASE: dict[str, dict[str, Any]] = {
    "h2d": {"bytes": 4096},
    "d2h": {"bytes": 4096, "host_memory": "pinned"},
    "d2d": {"bytes": 4096, "stream": "s1"},
    "memset": {"bytes": 4096, "async": False},
    "kernel": {"blocks": 64, "threads": 256, "duration_us": 10},
    "event_record": {"event": "e0", "stream": "s1"},
    "event_wait": {"event": "e0"},
    "event_sync": {"event": "e0"},
    "stream_sync": {"stream": "s1"},
    "device_sync": {},
    "host": {"duration_us": 5},
    "host_func": {"stream": "s1", "duration_us": 5},
    "malloc": {"bytes": 4096},
    "free": {},
    "peer_copy": {"bytes": 4096, "stream": "s1"},
    "all_reduce": {"bytes": 4096, "communicator": "world"},
    "reduce_scatter": {"bytes": 4096, "communicator": "world", "stream": "s2"},
    "all_gather": {"bytes": 4096, "communicator": "world"},
    "broadcast": {"bytes": 4096, "communicator": "world", "root": "gpu0"},
}
_VALID: dict[str, list[Any]] = {
    "stream": ["s1", "default"],
    "label": ["K0", ""],
    "bytes": [1, MAX_BYTES],
    "host_memory": ["pinned", "pageable"],
    "async": [True, False],
    "duration_us": [0.5, 370, MAX_DURATION_US],
    "blocks": [1, 4096],
    "threads": [1, 1024],
    "block_us": [0.5, 10],
    "flops": [1e9, 1],
    "blocks_per_sm": [1, 2048],
    "event": ["e0", "e1"],
    "device": ["gpu0"],
    "src_device": ["gpu0"],
    "dst_device": ["gpu0"],
    "communicator": ["world"],
    "root": ["gpu0"],
    "note": [{"kept": [1, 2]}, None],
}
_INVALID: dict[str, list[Any]] = {
    "stream": ["", "   ", 7],
    "label": [3, "x" * (MAX_NAME_CHARS + 1)],
    "bytes": [0, -4, MAX_BYTES + 1, 2.5, "64", True],
    "host_memory": ["managed", None],
    "async": [1, "true"],
    "duration_us": [0, -1, MAX_DURATION_US * 2, "5", None],
    "blocks": [0, MAX_BLOCKS + 1, 1.5, "8"],
    "threads": [0, 1025, 32.5],
    "block_us": [0, -1, MAX_DURATION_US * 2, "2"],
    "flops": [0, 1e16, "1e9"],
    "blocks_per_sm": [0, 2049, 1.5],
    "event": ["", " ", 5],
    "device": ["", 0],
    "src_device": [" ", None],
    "dst_device": ["", 1],
    "communicator": ["", 2],
    "root": ["", False],
}


@st.composite
def _raw_ops(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(OP_KINDS))
    op: dict[str, Any] = {"op": kind, **_BASE[kind]}
    for _ in range(draw(st.integers(0, 2))):
        key = draw(st.sampled_from(sorted(_VALID)))
        how = draw(st.sampled_from(["valid", "valid", "invalid", "remove"]))
        if how == "remove":
            op.pop(key, None)
        elif how == "invalid" and key in _INVALID:
            op[key] = draw(st.sampled_from(_INVALID[key]))
        else:
            op[key] = draw(st.sampled_from(_VALID[key]))
    return op


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=_raw_ops())
def test_schema_and_loader_agree_on_any_op(op: dict[str, Any]) -> None:
    doc = {**DOC, "program": [op]}
    errors = [e.message for e in VALIDATOR.iter_errors(doc)]
    assert (errors == []) == _loader_ok(doc), (op, errors)


@settings(max_examples=150, deadline=None)
@given(
    stream=st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(["s9", "default", "", " ", 3]),
            "kind": st.sampled_from(["blocking", "non_blocking", "legacy_default", "x", 1]),
            "priority": st.sampled_from([0, -5, MAX_PRIORITY, MAX_PRIORITY + 1, 0.5, True]),
        },
    )
)
def test_schema_and_loader_agree_on_any_stream(stream: dict[str, Any]) -> None:
    doc = {**DOC, "streams": [stream], "program": [{"op": "device_sync"}]}
    assert _schema_ok(doc) == _loader_ok(doc), stream


# -- several devices ------------------------------------------------------------------------------
MULTI: dict[str, Any] = {
    "format": "swimlanes-pipeline",
    "version": 1,
    "devices": [{"name": "gpu0"}, {"name": "gpu1"}],
    "communicators": [{"name": "world", "devices": ["gpu0", "gpu1"]}],
    "streams": [{"name": "s0", "device": "gpu0"}, {"name": "s1", "device": "gpu1"}],
    "program": [
        {"op": "all_reduce", "stream": "s0", "bytes": 4096, "communicator": "world"},
        {"op": "all_reduce", "stream": "s1", "bytes": 4096, "communicator": "world"},
        {"op": "peer_copy", "stream": "s0", "bytes": 4096, "dst_device": "gpu1"},
        {"op": "device_sync", "device": "gpu1"},
    ],
}
MULTI_INVALID: dict[str, tuple[str, Any]] = {
    "no devices in the list": ("devices", []),
    "a device without a name": ("devices.1", {}),
    "a communicator of no devices": ("communicators.0.devices", []),
    "a device twice in a communicator": ("communicators.0.devices", ["gpu0", "gpu0"]),
    "a communicator without devices": ("communicators.0.devices", ...),
    "a collective without a communicator": ("program.0.communicator", ...),
    "a collective without bytes": ("program.0.bytes", ...),
    "a root on an all-reduce": ("program.0.root", "gpu0"),
    "a peer copy without bytes": ("program.2.bytes", ...),
    "a device on a peer copy": ("program.2.device", "gpu0"),
    "a communicator on a host op": ("program.3.communicator", "world"),
    "a blank device name": ("program.3.device", " "),
}


def test_a_multi_device_document_is_valid_for_both() -> None:
    assert _loader_ok(MULTI) and _schema_ok(MULTI)


@pytest.mark.parametrize("case", sorted(MULTI_INVALID))
def test_invalid_multi_device_documents_are_refused_by_both(case: str) -> None:
    doc = _edited(*MULTI_INVALID[case], base=MULTI)
    assert not _loader_ok(doc), "the case should be one the loader refuses"
    assert not _schema_ok(doc)
