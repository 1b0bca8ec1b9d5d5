"""Property: every pipeline, run and timeline file Swimlanes saves is valid against the JSON
Schema it ships (random valid pipelines, saved, simulated, and saved as runs)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from hypothesis import HealthCheck, given, settings
from strategies import pipelines

from swimlanes.engine import simulate
from swimlanes.model import Pipeline, save_pipeline
from swimlanes.model.schema import pipeline_schema
from swimlanes.timeline.formats.io import save_run
from swimlanes.timeline.schema import run_schema, timeline_schema

PIPELINE = jsonschema.Draft202012Validator(pipeline_schema())
RUN = jsonschema.Draft202012Validator(run_schema())
TIMELINE = jsonschema.Draft202012Validator(timeline_schema())


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(pipeline=pipelines())
def test_saved_files_of_random_pipelines_are_valid(pipeline: Pipeline, tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    save_pipeline(pipeline, path)
    assert [e.message for e in PIPELINE.iter_errors(json.loads(path.read_text()))] == []
    timeline = simulate(pipeline, "h200")
    save_run(path, timeline, pipeline)
    run = json.loads(path.read_text())
    assert [e.message for e in RUN.iter_errors(run)] == []
    assert [e.message for e in TIMELINE.iter_errors(run["timeline"])] == []
