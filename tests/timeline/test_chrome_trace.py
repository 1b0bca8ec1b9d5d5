"""Chrome Trace Event export: processes, named rows, one event per op, flows, and reading back."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, SHARED_TRACES
from swimlanes.timeline import NO_TIME, Timeline, TimelineBuilder
from swimlanes.timeline.formats.chrome_trace import timeline_to_chrome_trace, write_chrome_trace
from swimlanes.timeline.formats.trace_import import load_trace

EXAMPLES = REPO / "resources" / "examples"
ERROR_ARGS = ("start_error_us", "end_error_us", "duration_error_pct")


def pipeline_timeline(source: str, device: str, offset: int = 0, stretch: int = 1) -> Timeline:
    """Two streams, an event dependency and host work; times in ns from ``offset``."""
    b = TimelineBuilder(["s1", "s2"], ["H2D", "compute", "D2H"])

    def t(ns: int) -> int:
        return offset + ns * stretch

    h2d = b.add(index=0, kind="h2d", stream="s1", engine="H2D", issue_start=t(0),
                issue_end=t(2_000), start=t(2_000), end=t(12_000), nbytes=64 << 20,
                label="H2D A")  # fmt: skip
    rec = b.add(index=1, kind="event_record", stream="s1", engine=None, issue_start=t(2_000),
                issue_end=t(3_000), start=t(12_000), end=t(12_000), label="record e0")  # fmt: skip
    wait = b.add(index=2, kind="event_wait", stream="s2", engine=None, issue_start=t(3_000),
                 issue_end=t(4_000), start=t(12_000), end=t(12_000))  # fmt: skip
    k = b.add(index=3, kind="kernel", stream="s2", engine="compute", issue_start=t(4_000),
              issue_end=t(9_000), start=t(12_000), end=t(20_000), label="K0")  # fmt: skip
    b.add(index=4, kind="host", stream=None, engine=None, issue_start=t(9_000),
          issue_end=t(15_000), label="host work")  # fmt: skip
    b.add(index=5, kind="d2h", stream="s2", engine="D2H", issue_start=t(15_000),
          issue_end=t(16_000), start=t(20_000), end=t(25_000), nbytes=1 << 20)  # fmt: skip
    b.add_dep(h2d, rec, "stream")
    b.add_dep(rec, wait, "event")
    b.add_dep(wait, k, "stream")
    return b.build(source=source, device=device, name="demo")


@pytest.fixture
def doc() -> dict[str, Any]:
    sim = pipeline_timeline("simulated", "h200")
    meas = pipeline_timeline("measured", "H200", offset=10**12, stretch=2)
    return timeline_to_chrome_trace([sim, meas])


def _meta(events: list[dict], name: str) -> dict[tuple, Any]:
    return {
        (e["pid"], e["tid"]): next(iter(e["args"].values()))
        for e in events
        if e["ph"] == "M" and e["name"] == name
    }


def test_two_processes_with_named_rows(doc: dict[str, Any]) -> None:
    events = doc["traceEvents"]
    procs = _meta(events, "process_name")
    assert procs == {(1, 0): "Simulated (h200)", (2, 0): "Measured (H200)"}
    threads = _meta(events, "thread_name")
    for pid in (1, 2):
        names = [n for (p, _), n in sorted(threads.items()) if p == pid]
        assert names == ["host thread", "s1", "s2", "H2D engine", "compute engine", "D2H engine"]
    order = _meta(events, "thread_sort_index")
    assert len(order) == len(threads) and len(set(order.values())) == len(threads) // 2
    # Every X event sits on a named row.
    assert all((e["pid"], e["tid"]) in threads for e in events if e["ph"] == "X")


def test_one_op_event_per_op_on_the_right_row(doc: dict[str, Any]) -> None:
    events = doc["traceEvents"]
    threads = _meta(events, "thread_name")
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    assert Counter(e["pid"] for e in ops) == {1: 6, 2: 6}
    sim = {e["args"]["index"]: e for e in ops if e["pid"] == 1}
    assert threads[(1, sim[0]["tid"])] == "s1"
    assert threads[(1, sim[3]["tid"])] == "s2"
    assert threads[(1, sim[4]["tid"])] == "host thread"
    # Beside a measurement, the model's errors on the op (model minus measurement): the
    # measured run is twice as slow, so the model starts and ends early and runs short.
    assert sim[0]["args"] == {
        "index": 0, "op": "h2d", "stream": "s1", "engine": "H2D", "bytes": 64 << 20,
        "GB/s": round((64 << 20) / 10_000, 3), "row": "stream",
        "start_error_us": -2.0, "end_error_us": -12.0, "duration_error_pct": -50.0,
    }  # fmt: skip
    # Microseconds relative to each timeline's own start: both begin at 0.
    assert (sim[0]["ts"], sim[0]["dur"]) == (2.0, 10.0)
    meas = {e["args"]["index"]: e for e in ops if e["pid"] == 2}
    assert (meas[0]["ts"], meas[0]["dur"]) == (4.0, 20.0)
    assert sim[4]["name"] == "host work" and sim[4]["dur"] == 6.0


def test_engine_copies_and_issue_spans(doc: dict[str, Any]) -> None:
    events = [e for e in doc["traceEvents"] if e.get("pid") == 1]
    threads = _meta(events, "thread_name")
    engine = [e for e in events if e["ph"] == "X" and e["cat"] == "engine"]
    assert sorted(threads[(1, e["tid"])] for e in engine) == [
        "D2H engine", "H2D engine", "compute engine"
    ]  # fmt: skip
    issue = [e for e in events if e["ph"] == "X" and e["cat"] == "issue"]
    # Every op with a device span shows its host API call on the host row.
    assert len(issue) == 5
    assert {threads[(1, e["tid"])] for e in issue} == {"host thread"}


def test_dependencies_are_bound_flows_with_unique_ids(doc: dict[str, Any]) -> None:
    events = doc["traceEvents"]
    flows = [e for e in events if e["ph"] in ("s", "f")]
    ids = Counter((e["id"], e["ph"]) for e in flows)
    assert len(flows) == 12 and set(ids.values()) == {1}
    assert {e["id"] for e in flows if e["pid"] == 1}.isdisjoint(
        {e["id"] for e in flows if e["pid"] == 2}
    )
    slices = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    for f in flows:
        if f["ph"] == "f":
            assert f["bp"] == "e"
        # Each end lies inside an op slice on its own row (how viewers bind flows).
        assert any(
            s["pid"] == f["pid"]
            and s["tid"] == f["tid"]
            and s["ts"] <= f["ts"] <= s["ts"] + s["dur"]
            for s in slices
        )


def test_write_is_valid_json_and_reads_back(tmp_path: Path) -> None:
    sim = pipeline_timeline("simulated", "h200")
    meas = pipeline_timeline("measured", "H200", offset=10**12, stretch=2)
    out = tmp_path / "trace.json"
    write_chrome_trace([sim, meas], out)
    data = json.loads(out.read_text())
    assert data["otherData"]["generator"] == "swimlanes"
    back = load_trace(out)  # picks the measured process
    assert back.source == "measured" and back.device == "H200"
    assert len(back) == len(meas)
    rel = meas.relative()
    assert [back.op_kind(r) for r in range(len(back))] == [rel.op_kind(r) for r in range(len(rel))]
    assert back.stream_names == ["s1", "s2"]
    assert back.start.tolist() == rel.start.tolist()
    assert back.issue_start.tolist() == rel.issue_start.tolist()
    assert back.start[4] == NO_TIME and back.issue_end[4] == rel.issue_end[4]
    assert back.bytes.tolist() == rel.bytes.tolist()
    deps = sorted(
        zip(back.dep_src.tolist(), back.dep_dst.tolist(), back.dep_kind.tolist(), strict=True)
    )
    assert deps == sorted(
        zip(meas.dep_src.tolist(), meas.dep_dst.tolist(), meas.dep_kind.tolist(), strict=True)
    )


def test_empty_timeline_exports_metadata_only() -> None:
    doc = timeline_to_chrome_trace([Timeline(source="simulated")])
    assert [e for e in doc["traceEvents"] if e["ph"] != "M"] == []


def test_concurrent_kernels_get_sub_rows_that_nest() -> None:
    b = TimelineBuilder(["s1", "s2", "s3"], ["compute"])
    spans = [("s1", 0, 100), ("s2", 50, 150), ("s3", 60, 90), ("s1", 100, 120)]
    for i, (s, start, end) in enumerate(spans):
        b.add(index=i, kind="kernel", stream=s, engine="compute", issue_start=NO_TIME,
              issue_end=NO_TIME, start=start, end=end)  # fmt: skip
    events = timeline_to_chrome_trace([b.build()])["traceEvents"]
    threads = _meta(events, "thread_name")
    engine = [e for e in events if e["ph"] == "X" and e["cat"] == "engine"]
    rows = {e["args"]["index"]: threads[(e["pid"], e["tid"])] for e in engine}
    # [50,150] partly overlaps [0,100]: second row; [60,90] nests inside [0,100] (first fit).
    assert rows == {
        0: "compute engine", 1: "compute engine (2)", 2: "compute engine", 3: "compute engine"
    }  # fmt: skip
    by_tid: dict[int, list[tuple[float, float]]] = {}
    for e in engine:
        by_tid.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans_on_row in by_tid.values():
        for a0, a1 in spans_on_row:
            for b0, b1 in spans_on_row:
                nested = (a0 <= b0 and b1 <= a1) or (b0 <= a0 and a1 <= b1)
                assert nested or a1 <= b0 or b1 <= a0


def test_measured_spread_is_shown_in_args() -> None:
    b = TimelineBuilder(["s"], ["compute"])
    b.add(index=0, kind="kernel", stream="s", engine="compute", issue_start=0, issue_end=10,
          start=10, end=5_010, start_spread=1_500, end_spread=NO_TIME)  # fmt: skip
    doc = timeline_to_chrome_trace([b.build(with_spread=True, source="measured")])
    op = next(e for e in doc["traceEvents"] if e.get("cat") == "op")
    assert op["args"]["start_spread_us"] == 1.5 and "end_spread_us" not in op["args"]


def _assert_rows_nest(events: list[dict[str, Any]]) -> None:
    """Trace viewers need the slices of each thread to nest or follow one another."""
    by_thread: dict[tuple, list[tuple[float, float]]] = {}
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends: list[float] = []
        for start, end in spans:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1], (start, end, open_ends)
            open_ends.append(end)


def test_every_row_nests(doc: dict[str, Any]) -> None:
    _assert_rows_nest(doc["traceEvents"])


@pytest.mark.skipif(not (SHARED_TRACES / "kineto-simple-add.json.gz").exists(), reason="no traces")
def test_imported_kineto_trace_exports_with_nesting_rows() -> None:
    tl = load_trace(SHARED_TRACES / "kineto-simple-add.json.gz")
    doc = timeline_to_chrome_trace([tl])
    _assert_rows_nest(doc["traceEvents"])
    ops = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "op"]
    assert len(ops) == len(tl)


def test_errors_are_on_both_processes_and_only_beside_a_measurement(doc: dict[str, Any]) -> None:
    ops = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "op"]
    by_pid = {
        pid: {e["args"]["index"]: e["args"] for e in ops if e["pid"] == pid} for pid in (1, 2)
    }
    assert by_pid[1] and all(
        {k: a.get(k) for k in ERROR_ARGS} == {k: by_pid[2][i].get(k) for k in ERROR_ARGS}
        for i, a in by_pid[1].items()
    )
    # host work is compared on its host call: 9..15 us simulated, 18..30 us measured
    assert by_pid[1][4]["duration_error_pct"] == -50.0 and by_pid[1][4]["end_error_us"] == -15.0
    alone = timeline_to_chrome_trace([pipeline_timeline("simulated", "h200")])
    assert not any(k in e.get("args", {}) for e in alone["traceEvents"] for k in ERROR_ARGS)


def test_no_flow_arrow_ends_before_it_starts_in_any_example() -> None:
    """A host sync's slice starts before the work it waits for: its arrow used to point back."""
    from swimlanes.services.simulation import simulate_file

    examples = sorted(EXAMPLES.glob("*.json"))
    assert len(examples) == 16  # 11 single-GPU lessons, 4 multi-GPU ones, 1 of host threads
    for path in examples:
        _, tl = simulate_file(path, None)
        events = timeline_to_chrome_trace([tl])["traceEvents"]
        op_slice = {e["args"]["index"]: e for e in events if e["ph"] == "X" and e["cat"] == "op"}
        starts = {e["id"]: e for e in events if e["ph"] == "s"}
        ends = [e for e in events if e["ph"] == "f"]
        assert len(ends) == len(starts) == len(tl.dep_src) > 0
        for f in ends:
            s = starts[f["id"]]
            assert f["ts"] >= s["ts"], f"{path.stem}: {f['name']} {s['args']} -> {f['args']}"
            for end in (s, f):  # each end inside the slice of the op it names, on its row
                sl = op_slice[end["args"]["index"]]
                assert sl["tid"] == end["tid"] and sl["ts"] <= end["ts"] <= sl["ts"] + sl["dur"]


def test_each_host_thread_is_a_track_of_its_own(tmp_path: Path) -> None:
    from swimlanes.services.simulation import simulate_file

    _, tl = simulate_file(EXAMPLES / "per-thread-default-stream.json", None)
    assert tl.thread_names == ["worker0", "worker1"]
    events = timeline_to_chrome_trace([tl])["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    tid_of = {name: tid for tid, name in names.items()}
    assert {"host thread worker0", "host thread worker1"} <= set(tid_of)
    assert "host thread" not in tid_of  # no shared host row
    host_tids = {tid_of["host thread worker0"]: "worker0", tid_of["host thread worker1"]: "worker1"}
    calls = [e for e in events if e["ph"] == "X" and e["tid"] in host_tids]
    assert calls
    for e in calls:  # every call on the track of the thread that made it
        assert tl.host_thread_name(e["args"]["index"]) == host_tids[e["tid"]]
    out = tmp_path / "threads.json"
    write_chrome_trace([tl], out)
    assert len(load_trace(out)) == len(tl)
