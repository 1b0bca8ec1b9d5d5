"""Saved runs and opening any timeline-like file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_TRACES
from swimlanes.model.validate import pipeline_from_dict
from swimlanes.timeline import Timeline, TimelineBuilder
from swimlanes.timeline.chrome_trace import write_chrome_trace
from swimlanes.timeline.io import load_run, load_timeline_any, save_run
from swimlanes.timeline.trace_import import TraceError

PIPELINE = {
    "format": "swimlanes-pipeline",
    "version": 1,
    "name": "tiny",
    "streams": [{"name": "s1", "kind": "blocking", "priority": 0}],
    "program": [
        {"op": "h2d", "stream": "s1", "bytes": 1024, "label": "in"},
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


def _same(a: Timeline, b: Timeline) -> None:
    assert a.to_dict() == b.to_dict()


def test_run_round_trip_with_pipeline(tmp_path: Path) -> None:
    path = tmp_path / "tiny.run.json"
    pipeline = pipeline_from_dict(PIPELINE)
    save_run(path, measured(), pipeline)
    data = json.loads(path.read_text())
    assert (data["format"], data["version"]) == ("swimlanes-run", 1)
    tl, back = load_run(path)
    _same(tl, measured())
    assert back is not None and back.to_dict() == pipeline.to_dict()
    assert np.array_equal(tl.end_spread, [20, 7])
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.run.json"]  # no temp file left


def test_run_without_pipeline_and_bare_timeline(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    save_run(path, measured())
    assert load_run(path)[1] is None
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(measured().to_dict()))
    tl, pipeline = load_run(bare)
    _same(tl, measured())
    assert pipeline is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"format": "swimlanes-run", "version": 9, "timeline": {}}, "unsupported run version 9"),
        ({"format": "swimlanes-run", "version": 1}, "no 'timeline'"),
        ({"format": "something"}, "not a swimlanes run"),
        ([1, 2], "expected a JSON object"),
        (
            {
                "format": "swimlanes-run",
                "version": 1,
                "timeline": {"format": "swimlanes-timeline", "version": 1},
            },
            "malformed timeline",
        ),  # fmt: skip
        (
            {
                "format": "swimlanes-run",
                "version": 1,
                "timeline": measured().to_dict(),
                "pipeline": {
                    "format": "swimlanes-pipeline",
                    "version": 1,
                    "program": [{"op": "x"}],
                },
            },
            "run file's pipeline",
        ),  # fmt: skip
    ],
)
def test_bad_run_files(tmp_path: Path, data: object, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TraceError, match=message):
        load_run(path)


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{nope")
    with pytest.raises(TraceError, match="not valid JSON"):
        load_run(path)


def test_load_any_dispatches_on_content(tmp_path: Path) -> None:
    run = tmp_path / "a.json"
    save_run(run, measured(), pipeline_from_dict(PIPELINE))
    tl, pipeline = load_timeline_any(run)
    _same(tl, measured())
    assert pipeline is not None and pipeline.name == "tiny"

    bare = tmp_path / "b.json.gz"  # gzip detected by magic bytes, not by name
    bare.write_bytes(gzip.compress(json.dumps(measured().to_dict()).encode()))
    tl, pipeline = load_timeline_any(bare)
    _same(tl, measured())
    assert pipeline is None

    chrome = tmp_path / "c.json"
    write_chrome_trace([measured()], chrome)
    tl, _ = load_timeline_any(chrome)
    assert tl.source == "measured" and len(tl) == 2
    assert tl.start.tolist() == measured().relative().start.tolist()

    gz_run = tmp_path / "d.bin"
    gz_run.write_bytes(gzip.compress(run.read_bytes()))
    assert load_timeline_any(gz_run)[1] is not None


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason=f"no shared traces in {SHARED_TRACES}")
def test_load_any_opens_kineto() -> None:
    tl, pipeline = load_timeline_any(SHARED_TRACES / "kineto-simple-add.json.gz")
    assert pipeline is None and tl.meta["trace_format"] == "kineto"
    assert tl.name == "kineto-simple-add"


def test_load_any_refuses_a_pipeline(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(PIPELINE))
    with pytest.raises(TraceError, match="swimlanes-pipeline file is not a trace"):
        load_timeline_any(path)


def test_load_trace_also_opens_a_saved_run(tmp_path: Path) -> None:
    from swimlanes.timeline.trace_import import load_trace

    path = tmp_path / "r.json"
    save_run(path, measured(), pipeline_from_dict(PIPELINE))
    _same(load_trace(path), measured())
