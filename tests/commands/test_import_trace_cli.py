"""``swimlanes import-trace``: a trace becomes a pipeline and a run that compare lines up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SHARED_TRACES
from swimlanes.cli import main
from swimlanes.model.io import load_pipeline
from swimlanes.timeline.formats.io import load_run

EVENT_SYNC = SHARED_TRACES / "kineto-a100-event-sync.json.gz"


@pytest.mark.skipif(not EVENT_SYNC.exists(), reason=f"shared traces not found in {SHARED_TRACES}")
def test_a_trace_opens_as_a_pipeline_and_compares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline, run = tmp_path / "p.json", tmp_path / "p.run.json"
    assert main(["import-trace", str(EVENT_SYNC), "-o", str(pipeline), "--run", str(run)]) == 0
    out = capsys.readouterr().out
    assert "replayed on a100" in out and "host ops" in out
    doc = load_pipeline(pipeline)
    assert doc.extra["device"] == "a100"
    timeline, stored = load_run(run)
    assert stored is not None and len(stored.program) == len(doc.program)
    assert main(["compare", str(pipeline), "--measured", str(run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["ops"]) == len(timeline)


def test_a_file_that_is_no_trace_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["import-trace", str(bad), "-o", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "Traceback" not in err
    assert not (tmp_path / "p.json").exists()
