"""Saved runs and opening any timeline-like file."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_TRACES
from swimlanes.model.validate import pipeline_from_dict
from swimlanes.timeline import Timeline, TimelineBuilder
from swimlanes.timeline.formats.chrome_trace import write_chrome_trace
from swimlanes.timeline.formats.io import load_run, load_timeline_any, run_to_dict, save_run
from swimlanes.timeline.formats.trace_import import TraceError

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
    with pytest.raises(TraceError, match="invalid JSON"):
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
    from swimlanes.timeline.formats.trace_import import load_trace

    path = tmp_path / "r.json"
    save_run(path, measured(), pipeline_from_dict(PIPELINE))
    _same(load_trace(path), measured())


def _with(edit: dict, *, bare: bool = False) -> dict:
    """A saved run (or a bare timeline) with the timeline's keys set by ``edit``: dotted paths
    reach into ``columns``, ``deps`` and ``occupancy``."""
    tl = measured().to_dict()
    for path, value in edit.items():
        *outer, key = path.split(".")
        (tl[outer[0]] if outer else tl)[key] = value
    return tl if bare else {"format": "swimlanes-run", "version": 1, "timeline": tl}


WRONG_TIMELINES = [
    ({"occupancy": []}, "occupancy: must be a JSON object"),
    ({"deps": []}, "deps: must be a JSON object"),
    ({"columns": [1, 2]}, "columns: must be a JSON object"),
    ({"meta": [1]}, "meta: must be a JSON object"),
    ({"labels": 5}, "labels: must be a JSON list"),
    ({"stream_names": {"a": 1}}, "stream_names: must be a JSON list"),
    ({"columns.start": "12"}, "columns.start: must be a JSON list"),
    ({"columns.start": [1000, [3000]]}, "columns.start[1]: must be an integer"),
    ({"columns.start": [1000, 1.5]}, "columns.start[1]: must be an integer"),
    ({"columns.end": [3000, True]}, "columns.end[1]: must be an integer"),
    ({"columns.end": [3000, 1e300]}, "columns.end[1]: must be an integer"),
    ({"columns.end": [3000, 2**70]}, "columns.end[1]: must be an integer in the 64-bit range"),
    ({"columns.end": [3000, "4301 digits"]}, "columns.end[1]: must be an integer"),
    ({"occupancy.time": ["4301 digits"], "occupancy.sms": [1]}, "occupancy.time[0]: must be"),
    ({"columns.end": [3000, 2**63 - 1]}, "columns.end[1]: must be an integer from"),
    ({"columns.issue_start": [-(2**62), 0]}, "columns.issue_start[0]: must be an integer from"),
    ({"columns.bytes": [-1, 0]}, "columns.bytes[0]: must be an integer from"),
    ({"columns.kind": [0, 300]}, "columns.kind[1]: must be an integer from"),
    ({"columns.stream": [0]}, "column stream has 1 rows"),
    ({"deps.src": ["0"]}, "deps.src[0]: must be an integer"),
    ({"deps.kind": ["telepathy"]}, "deps.kind[0]: 'telepathy' is not a dependency kind"),
    ({"deps.kind": [["stream"]]}, "deps.kind[0]"),
    ({"occupancy.time": [0, 1e300]}, "occupancy.time[1]: must be an integer"),
    ({"occupancy.time": [0, 1]}, "occupancy lists differ in length"),
    ({"occupancy.sm_count": "many"}, "occupancy.sm_count: must be a count"),
]


@pytest.mark.parametrize(("edit", "message"), WRONG_TIMELINES)
@pytest.mark.parametrize("bare", [False, True], ids=["run", "timeline"])
def test_wrong_typed_timeline_members_are_named(
    tmp_path: Path, edit: dict, message: str, bare: bool
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_with(edit, bare=bare)).replace('"4301 digits"', "9" * 4301))
    where = "" if bare or "differ" in message or "rows" in message else "timeline."
    for load in (load_run, load_timeline_any):
        with pytest.raises(TraceError, match=re.escape(where + message)):
            load(path)


def test_times_at_the_ends_of_the_range_load(tmp_path: Path) -> None:
    from swimlanes.timeline.timeline import NO_TIME, TIME_LIMIT_NS

    path = tmp_path / "edge.json"
    edges = {
        "columns.start": [-(TIME_LIMIT_NS - 1), NO_TIME],
        "columns.end": [TIME_LIMIT_NS - 1, NO_TIME],
    }
    path.write_text(json.dumps(_with(edges)))
    tl, _ = load_run(path)
    assert tl.end.tolist() == [TIME_LIMIT_NS - 1, NO_TIME]


@pytest.mark.parametrize("size", [1, 5, 17, 4096])
def test_run_text_split_anywhere_loads_the_same(size: int) -> None:
    from swimlanes.timeline.formats.trace_import import read_timelines

    text = json.dumps(run_to_dict(measured(), pipeline_from_dict(PIPELINE)), indent=1)
    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    (tl,), pipeline = read_timelines(chunks)
    _same(tl, measured())
    assert pipeline is not None and pipeline.name == "tiny"


def test_rows_of_a_run_are_limited(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    save_run(path, measured())
    assert len(load_run(path, max_kept=2)[0]) == 2
    # Labels come first in the file: the first per-op list over the limit is named.
    with pytest.raises(TraceError, match=r"timeline\.labels: more than 1 values"):
        load_run(path, max_kept=1)
    with pytest.raises(TraceError, match="more than 1 values"):
        load_timeline_any(path, max_kept=1)


def test_a_run_with_sorted_keys_loads(tmp_path: Path) -> None:
    # "columns" comes before "format" when keys are sorted (jq -S): read whole, not streamed.
    path = tmp_path / "sorted.json"
    path.write_text(json.dumps(measured().to_dict(), sort_keys=True))
    _same(load_timeline_any(path)[0], measured())
