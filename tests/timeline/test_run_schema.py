"""The run and timeline files' JSON Schemas: what Swimlanes writes and ships is valid, and
broken files are refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from swimlanes.engine import simulate
from swimlanes.model.document import OP_KINDS
from swimlanes.model.generators import random_pipeline
from swimlanes.model.io import load_pipeline
from swimlanes.model.validate import pipeline_from_dict
from swimlanes.resources import example_names, example_path, measurements_dir
from swimlanes.timeline import NO_TIME, Timeline, TimelineBuilder
from swimlanes.timeline.formats.io import TraceError, run_from_dict, save_run
from swimlanes.timeline.schema import run_schema, timeline_schema

RUN = jsonschema.Draft202012Validator(run_schema())
TIMELINE = jsonschema.Draft202012Validator(timeline_schema())

PIPELINE = {
    "format": "swimlanes-pipeline",
    "version": 1,
    "name": "tiny",
    "streams": [{"name": "s1"}],
    "program": [
        {"op": "h2d", "stream": "s1", "bytes": 1024},
        {"op": "kernel", "stream": "s1", "blocks": 4, "threads": 128, "duration_us": 5},
    ],
}


def measured() -> Timeline:
    b = TimelineBuilder(["s1"], ["H2D", "compute"])
    b.add(index=0, kind="h2d", stream="s1", engine="H2D", issue_start=100, issue_end=900,
          start=1_000, end=3_000, nbytes=1024, label="in", start_spread=10, end_spread=20)  # fmt: skip
    b.add(index=1, kind="kernel", stream="s1", engine="compute", issue_start=900,
          issue_end=1_500, start=3_000, end=8_000, start_spread=5, end_spread=7)  # fmt: skip
    b.add_dep(0, 1, "stream")
    return b.build(with_spread=True, source="measured", device="H200", name="tiny run")


def _run_doc() -> dict[str, Any]:
    return json.loads(json.dumps(
        {"format": "swimlanes-run", "version": 1, "timeline": measured().to_dict(),
         "pipeline": PIPELINE}
    ))  # fmt: skip


def _errors(validator: jsonschema.Draft202012Validator, doc: Any) -> list[str]:
    return [f"{e.json_path}: {e.message[:120]}" for e in validator.iter_errors(doc)]


def test_the_schemas_are_valid_draft_2020_12_schemas() -> None:
    for schema in (run_schema(), timeline_schema()):
        jsonschema.Draft202012Validator.check_schema(schema)


def _shipped_runs() -> list[Path]:
    paths = sorted(measurements_dir().glob("*.json"))
    return [p for p in paths if json.loads(p.read_text()).get("format") == "swimlanes-run"]


def test_the_shipped_measurements_include_runs() -> None:
    assert len(_shipped_runs()) >= 10


@pytest.mark.parametrize("path", _shipped_runs(), ids=lambda p: p.stem)
def test_every_shipped_run_is_valid(path: Path) -> None:
    data = json.loads(path.read_text())
    assert _errors(RUN, data) == []
    assert _errors(TIMELINE, data["timeline"]) == []


@pytest.mark.parametrize("name", example_names())
def test_saved_simulated_runs_and_timelines_are_valid(name: str, tmp_path: Path) -> None:
    pipeline = load_pipeline(example_path(name))
    # A multi-GPU lesson runs on its own preset (one with enough GPUs).
    timeline = simulate(pipeline, pipeline.extra["device"] if pipeline.is_multi_device else "h200")
    path = tmp_path / "saved.run.json"
    save_run(path, timeline, pipeline)
    data = json.loads(path.read_text())
    assert _errors(RUN, data) == []
    assert _errors(TIMELINE, json.loads(json.dumps(timeline.to_dict()))) == []


def test_a_measured_run_without_its_pipeline_is_valid(tmp_path: Path) -> None:
    big = simulate(random_pipeline(500, 8, seed=3), "h200")
    for timeline in (measured(), big):
        path = tmp_path / "run.json"
        save_run(path, timeline)
        assert _errors(RUN, json.loads(path.read_text())) == []


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
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
    "another format": ("format", "swimlanes-timeline"),
    "version 2": ("version", 2),
    "no timeline": ("timeline", ...),
    "a timeline of another version": ("timeline.version", 2),
    "no columns": ("timeline.columns", ...),
    "a missing column": ("timeline.columns.solo_ns", ...),
    "an op kind past the list": ("timeline.columns.kind", [0, len(OP_KINDS)]),
    "a stream index below -1": ("timeline.columns.stream", [0, -2]),
    "a time past 2**62 ns": ("timeline.columns.end", [3_000, 2**62]),
    "a time as a float": ("timeline.columns.start", [1_000.5, 3_000]),
    "a start spread alone": ("timeline.columns.end_spread", ...),
    "an unknown source": ("timeline.source", "guessed"),
    "an unknown dependency kind": ("timeline.deps.kind", ["telepathy"]),
    "a negative SM count": ("timeline.occupancy.sm_count", -1),
    "labels as text": ("timeline.labels", "in, kernel"),
    "a broken pipeline": ("pipeline.program.0.bytes", ...),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_broken_runs_are_refused_by_the_loader_and_the_schema(case: str) -> None:
    doc = _set(_run_doc(), *INVALID[case])
    with pytest.raises((TraceError, ValueError)):
        run_from_dict(doc)
    assert _errors(RUN, doc) != []


def test_the_untouched_run_passes_both() -> None:
    timeline, pipeline = run_from_dict(_run_doc())
    assert len(timeline) == 2 and pipeline == pipeline_from_dict(PIPELINE)
    assert _errors(RUN, _run_doc()) == []


def test_misspelt_keys_are_reported_not_silently_dropped() -> None:
    """The loader skips keys it does not know in runs and timelines (nothing keeps them):
    the schema names them, so that a typo shows in an editor."""
    doc = _set(_run_doc(), "timeline.stream_name", ["s1"])
    assert _errors(RUN, doc) != []
    assert _errors(RUN, _set(_run_doc(), "pipelines", None)) != []
    assert _errors(RUN, _set(_run_doc(), "$schema", "./run.schema.json")) == []
    assert _errors(RUN, _set(_run_doc(), "timeline.meta", {"anything": [1, {"x": None}]})) == []


def test_no_time_is_allowed_in_time_columns_only() -> None:
    doc = _set(_run_doc(), "timeline.columns.start", [NO_TIME, 3_000])
    assert _errors(RUN, doc) == []
    doc = _set(_run_doc(), "timeline.occupancy.time", [NO_TIME])
    assert _errors(RUN, doc) != []
