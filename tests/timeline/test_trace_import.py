"""Opening Kineto / Chrome traces: real PyTorch profiler traces, malformed input, gzip limits."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SHARED_TRACES
from swimlanes.timeline.formats.io import TraceCancelled
from swimlanes.timeline.formats.trace_import import TraceError, load_trace, read_timelines
from swimlanes.timeline.timeline import NO_TIME

EVENT_SYNC = SHARED_TRACES / "kineto-a100-event-sync.json.gz"
SIMPLE_ADD = SHARED_TRACES / "kineto-simple-add.json.gz"
needs_traces = pytest.mark.skipif(
    not SIMPLE_ADD.exists(), reason=f"shared PyTorch traces not found in {SHARED_TRACES}"
)


def _raw_events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


def _kinds(tl: Any) -> Counter:
    return Counter(tl.op_kind(r) for r in range(len(tl)))


@needs_traces
@pytest.mark.parametrize("path", [EVENT_SYNC, SIMPLE_ADD], ids=["event-sync", "simple-add"])
def test_real_kineto_trace_counts(path: Path) -> None:
    events = _raw_events(path)
    by_cat = Counter(e.get("cat") for e in events if e.get("ph") == "X")
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    streams = {e["args"]["stream"] for e in gpu}
    tl = load_trace(path)
    kinds = _kinds(tl)
    assert tl.source == "measured"
    assert kinds["kernel"] == by_cat["kernel"]
    assert kinds["h2d"] + kinds["d2h"] + kinds["d2d"] == by_cat["gpu_memcpy"]
    assert kinds["memset"] == by_cat.get("gpu_memset", 0)
    assert sorted(tl.stream_names) == sorted(f"stream {s}" for s in streams)
    assert tl.device == "NVIDIA A100-PG509-200"
    # Device spans are the GPU records' own times.
    kernel_ts = sorted(e["ts"] * 1000 for e in events if e.get("cat") == "kernel")
    mine = sorted(int(tl.start[r]) for r in range(len(tl)) if tl.op_kind(r) == "kernel")
    assert mine == kernel_ts


@needs_traces
def test_simple_add_streams_copies_and_issue_spans() -> None:
    events = _raw_events(SIMPLE_ADD)
    tl = load_trace(SIMPLE_ADD, progress=None)
    assert tl.stream_names == ["stream 7", "stream 20"]
    per_stream = Counter(
        e["args"]["stream"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy")
    )
    kinds_on = Counter(tl.stream_name(r) for r in range(len(tl)) if tl.engine[r] >= 0)
    assert kinds_on["stream 20"] == per_stream[20] + sum(
        1 for e in events if e.get("cat") == "gpu_memset" and e["args"]["stream"] == 20
    )
    # All 16 copies in this trace are pageable H2D, so the copies land on the H2D engine.
    pageable = sum(1 for e in events if "Pageable" in e.get("name", ""))
    assert len(tl.meta["pageable_rows"]) == pageable == 16
    assert all(tl.op_kind(r) == "h2d" for r in tl.meta["pageable_rows"])
    # A kernel's host issue span is its cudaLaunchKernel call, found by correlation id.
    launch = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"
    }
    kernel = next(e for e in events if e.get("cat") == "kernel")
    call = launch[kernel["args"]["correlation"]]
    row = next(r for r in range(len(tl)) if tl.start[r] == kernel["ts"] * 1000)
    assert (tl.issue_start[row], tl.issue_end[row]) == (
        call["ts"] * 1000,
        (call["ts"] + call["dur"]) * 1000,
    )
    # Rows come in host issue order.
    key = [
        int(tl.issue_start[r]) if tl.issue_start[r] != NO_TIME else int(tl.start[r])
        for r in range(len(tl))
    ]
    assert key == sorted(key)


@needs_traces
def test_event_sync_trace_links_sync_to_its_record() -> None:
    events = _raw_events(EVENT_SYNC)
    syncs = [e for e in events if e.get("name") == "Event Sync"]
    tl = load_trace(EVENT_SYNC)
    kinds = _kinds(tl)
    assert kinds["event_sync"] == len(syncs) == 2
    assert kinds["stream_sync"] == 1 and kinds["device_sync"] == 1
    deps = [(tl.op_kind(s), tl.op_kind(d)) for s, d in zip(tl.dep_src, tl.dep_dst, strict=True)]
    assert deps.count(("event_record", "event_sync")) == 2


@needs_traces
def test_plain_and_gzipped_load_the_same(tmp_path: Path) -> None:
    plain = tmp_path / "t.json"
    plain.write_bytes(gzip.decompress(SIMPLE_ADD.read_bytes()))
    a, b = load_trace(plain), load_trace(SIMPLE_ADD)
    assert a.to_dict()["columns"] == b.to_dict()["columns"]
    assert (a.name, b.name) == ("t", "kineto-simple-add")


def _trace(events: list[dict[str, Any]], **top: Any) -> str:
    return json.dumps({"traceEvents": events, **top})


def _kernel(ts: float, stream: int = 7, corr: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": stream, "ts": ts, "dur": 5,
        "args": {"stream": stream, "correlation": corr, "device": 0}, **extra,
    }  # fmt: skip


def _write(tmp_path: Path, text: str, name: str = "t.json") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_memcpy_direction_and_memory_from_name(tmp_path: Path) -> None:
    names = [
        "Memcpy HtoD (Pinned -> Device)",
        "Memcpy DtoH (Device -> Pageable)",
        "Memcpy DtoD (Device -> Device)",
    ]
    events = [
        {"ph": "X", "cat": "gpu_memcpy", "name": n, "pid": 0, "tid": 7, "ts": 10 * i, "dur": 2,
         "args": {"stream": 7, "bytes": 4096, "correlation": i}}
        for i, n in enumerate(names)
    ]  # fmt: skip
    tl = load_trace(_write(tmp_path, _trace(events)))
    assert [tl.op_kind(r) for r in range(3)] == ["h2d", "d2h", "d2d"]
    # As in the simulator, D2D copies run on the SMs.
    assert [tl.engine_name(r) for r in range(3)] == ["H2D", "D2H", "Compute"]
    assert tl.meta["pageable_rows"] == [1]
    assert tl.bytes.tolist() == [4096] * 3


def test_flows_between_different_ops_become_deps(tmp_path: Path) -> None:
    events = [
        _kernel(0, corr=1),
        _kernel(10, stream=8, corr=2),
        {"ph": "s", "id": 9, "pid": 0, "tid": 7, "ts": 2, "cat": "x", "name": "x"},
        {"ph": "f", "id": 9, "pid": 0, "tid": 8, "ts": 10, "cat": "x", "name": "x", "bp": "e"},
    ]
    tl = load_trace(_write(tmp_path, _trace(events)))
    assert (tl.dep_src.tolist(), tl.dep_dst.tolist()) == ([0], [1])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_trace([_kernel(0), {**_kernel(1), "ts": "12"}]), "traceEvents[1]: 'ts' must be a number"),
        (_trace([{**_kernel(0), "dur": None}]), "traceEvents[0]: 'dur' is missing"),
        (_trace([{**_kernel(0), "dur": -3}]), "'dur' must not be negative"),
        (_trace([_kernel(0), 7]), "traceEvents[1]: must be an object"),
        (_trace([_kernel(0)])[:-30], "truncated JSON"),
        ('{"traceEvents": [{"ph": "X", "ts": 1,, }]}', "traceEvents[0]: invalid JSON"),
        ('{"traceEvents": [] } trailing', "extra data"),
        ('{"other": 1}', "no 'traceEvents'"),
        ('{"traceEvents": {"a": 1}}', "'traceEvents' must be a list"),
        (_trace([{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}]), "no GPU activity"),
        ("hello", "expected a JSON object or array"),
        ('{"format": "swimlanes-pipeline", "version": 1}', "not a trace"),
    ],
)
def test_malformed_traces_are_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(TraceError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_trace(_write(tmp_path, text))


def test_array_format_may_omit_closing_bracket(tmp_path: Path) -> None:
    # The Chrome JSON Array Format allows a cut-off trace without its final ']'.
    text = "[" + json.dumps(_kernel(0)) + ",\n" + json.dumps(_kernel(9, corr=2)) + ",\n"
    assert len(load_trace(_write(tmp_path, text))) == 2


def test_truncated_gzip_is_refused(tmp_path: Path) -> None:
    data = gzip.compress(_trace([_kernel(i, corr=i) for i in range(2000)]).encode())
    p = tmp_path / "t.json.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match="truncated gzip stream"):
        load_trace(p)


def test_gzip_bomb_stops_at_the_limit_even_if_the_footer_lies(tmp_path: Path) -> None:
    payload = b'{"traceEvents": [' + b" " * (64 * 1024 * 1024) + b"]}"
    data = bytearray(gzip.compress(payload))
    data[-4:] = (100).to_bytes(4, "little")  # ISIZE claims 100 bytes
    p = tmp_path / "bomb.json.gz"
    p.write_bytes(bytes(data))
    with pytest.raises(TraceError, match="limit"):
        load_trace(p, max_bytes=1024 * 1024)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        load_trace(tmp_path / "absent.json")
    with pytest.raises(TraceError, match="folder"):
        load_trace(tmp_path)


def test_progress_and_cancel(tmp_path: Path) -> None:
    p = _write(tmp_path, _trace([_kernel(i * 10, corr=i) for i in range(20_000)]))
    seen: list[float] = []
    tl = load_trace(p, progress=seen.append)
    assert len(tl) == 20_000
    assert len(seen) > 3 and seen == sorted(seen) and seen[-1] == 1.0
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(TraceCancelled):
        load_trace(p, cancel=cancel)


def test_runtime_calls_without_gpu_records_become_host_ops(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": 1, "tid": 1, "ts": 0,
         "dur": 50, "args": {"correlation": 5}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGetDeviceCount", "pid": 1, "tid": 1,
         "ts": 60, "dur": 1, "args": {"correlation": 6}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 70, "dur": 4, "args": {"correlation": 7}},
        _kernel(80, corr=7),
    ]  # fmt: skip
    tl = load_trace(_write(tmp_path, _trace(events)))
    assert [tl.op_kind(r) for r in range(len(tl))] == ["malloc", "kernel"]
    assert tl.start[0] == NO_TIME and tl.issue_end[0] == 50_000
    assert (tl.issue_start[1], tl.start[1]) == (70_000, 80_000)


def test_two_devices_get_distinct_stream_rows(tmp_path: Path) -> None:
    a = _kernel(0, corr=1)
    b = _kernel(5, corr=2)
    b["args"] = {**b["args"], "device": 1}
    tl = load_trace(_write(tmp_path, _trace([a, b])))
    assert tl.stream_names == ["GPU 0 stream 7", "GPU 1 stream 7"]


def _small_kineto() -> list[dict[str, Any]]:
    """A runtime call, its kernel and memcpy, a sync with its record, and a flow pair."""
    call = {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 1,
        "tid": 1,
        "ts": 0,
        "dur": 4,
        "args": {"correlation": 1},
    }
    rec = {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaEventRecord",
        "pid": 1,
        "tid": 1,
        "ts": 5,
        "dur": 1,
        "args": {"correlation": 3},
    }
    copy = {
        "ph": "X",
        "cat": "gpu_memcpy",
        "name": "Memcpy DtoH (Device -> Pageable)",
        "pid": 0,
        "tid": 7,
        "ts": 20,
        "dur": 3,
        "args": {"stream": 7, "bytes": 64, "correlation": 2},
    }
    sync = {
        "ph": "X",
        "cat": "cuda_sync",
        "name": "Event Sync",
        "pid": 0,
        "tid": -1,
        "ts": 30,
        "dur": 2,
        "args": {
            "cuda_sync_kind": "Event Sync",
            "correlation": 4,
            "wait_on_cuda_event_record_corr_id": 3,
        },
    }
    flow_s = {"ph": "s", "id": 5, "pid": 0, "tid": 7, "ts": 11, "cat": "x", "name": "x"}
    flow_f = {"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 21, "cat": "x", "name": "x", "bp": "e"}
    return [call, _kernel(10, corr=1), rec, copy, sync, flow_s, flow_f]  # fmt: skip


def _as_begin_end(ev: dict[str, Any]) -> list[dict[str, Any]]:
    """A complete ("X") event as a "B"/"E" pair, its arguments split between the two."""
    args = dict(ev.get("args", {}))
    late = {k: args.pop(k) for k in list(args)[1:]}  # the E event carries all but the first
    begin = {k: v for k, v in ev.items() if k != "dur"} | {"ph": "B", "args": args}
    end = {"ph": "E", "pid": ev["pid"], "tid": ev["tid"], "ts": ev["ts"] + ev["dur"]}
    return [begin, end | ({"args": late} if late else {})]


def test_begin_end_pairs_load_as_complete_events(tmp_path: Path) -> None:
    events = _small_kineto()
    paired: list[dict[str, Any]] = []
    for ev in events:
        paired += _as_begin_end(ev) if ev["ph"] == "X" else [ev]
    # Pairs on one thread nest: an outer B/E around them changes nothing on the GPU.
    paired = [{"ph": "B", "name": "step", "pid": 1, "tid": 1, "ts": 0}, *paired]
    paired.append({"ph": "E", "pid": 1, "tid": 1, "ts": 40})
    plain = load_trace(_write(tmp_path, _trace(events), "x.json"))
    pairs = load_trace(_write(tmp_path, _trace(paired), "be.json"))
    assert pairs.to_dict()["columns"] == plain.to_dict()["columns"]
    assert pairs.meta["skipped_events"] == {"uncategorised": 1}  # the outer "step"


def test_unmatched_begin_end_events_are_counted_and_backwards_ones_refused(tmp_path: Path) -> None:
    events = [
        _kernel(0),
        {"ph": "E", "pid": 0, "tid": 9, "ts": 3},
        {"ph": "B", "cat": "kernel", "name": "k2", "pid": 0, "tid": 8, "ts": 4},
    ]
    tl = load_trace(_write(tmp_path, _trace(events)))
    assert len(tl) == 1
    assert tl.meta["skipped_events"] == {"ph E without B": 1, "ph B without E": 1}
    backwards = [
        {"ph": "B", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10},
        {"ph": "E", "pid": 0, "tid": 7, "ts": 9},
    ]
    with pytest.raises(TraceError, match=r"traceEvents\[1\]: 'E' ends before its 'B'"):
        load_trace(_write(tmp_path, _trace(backwards), "back.json"))


hostile_values = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
    st.text(max_size=5), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)  # fmt: skip
fields = st.sampled_from(["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args", "bp"])
arg_fields = st.sampled_from(
    ["stream", "correlation", "bytes", "device", "cuda_sync_kind",
     "wait_on_cuda_event_record_corr_id"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.booleans(), fields, arg_fields, hostile_values),
        min_size=1,
        max_size=4,
    )
)
def test_corrupted_traces_fail_only_with_trace_error(tmp_path_factory, edits: list) -> None:
    events = _small_kineto()
    for which, in_args, field, arg, value in edits:
        ev = events[which]
        if in_args and isinstance(ev.get("args"), dict):
            ev["args"][arg] = value
        else:
            ev[field] = value
    path = tmp_path_factory.mktemp("fuzz") / "t.json"
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    try:
        tl = load_trace(path)
    except TraceError:
        return
    # What loads is a consistent timeline that metrics and export accept.
    from swimlanes.timeline.formats.chrome_trace import timeline_to_chrome_trace
    from swimlanes.timeline.metrics import compute_metrics

    compute_metrics(tl)
    json.dumps(timeline_to_chrome_trace([tl]))
    assert ((tl.dep_src >= 0) & (tl.dep_src < len(tl))).all()


def test_deeply_nested_json_is_refused(tmp_path: Path) -> None:
    text = '{"traceEvents": [' + "[" * 100_000 + "]" * 100_000 + "]}"
    with pytest.raises(TraceError, match="nested too deeply"):
        load_trace(_write(tmp_path, text))


def test_nan_time_is_refused(tmp_path: Path) -> None:
    text = '{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": NaN, "dur": 1}]}'
    with pytest.raises(TraceError, match=r"traceEvents\[0\]: 'ts' is not a finite time"):
        load_trace(_write(tmp_path, text))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.booleans(), fields,
                  st.sampled_from(["index", "op", "stream", "engine", "bytes", "row"]),
                  hostile_values),
        min_size=1, max_size=4,
    )
)  # fmt: skip
def test_corrupted_swimlanes_traces_fail_only_with_trace_error(
    tmp_path_factory, edits: list
) -> None:
    from swimlanes.timeline.formats.chrome_trace import timeline_to_chrome_trace
    from swimlanes.timeline.timeline import TimelineBuilder

    b = TimelineBuilder(["s1", "s2"], ["H2D", "Compute"])
    b.add(index=0, kind="h2d", stream="s1", engine="H2D", issue_start=0, issue_end=5,
          start=5, end=50, nbytes=100)  # fmt: skip
    b.add(index=1, kind="kernel", stream="s2", engine="Compute", issue_start=5, issue_end=9,
          start=50, end=90)  # fmt: skip
    b.add(index=2, kind="host", stream=None, engine=None, issue_start=9, issue_end=30)
    b.add_dep(0, 1, "event")
    doc = timeline_to_chrome_trace([b.build(source="measured")])
    events = doc["traceEvents"]
    for which, in_args, field, arg, value in edits:
        ev = events[which % len(events)]
        if in_args and isinstance(ev.get("args"), dict):
            ev["args"][arg] = value
        else:
            ev[field] = value
    path = tmp_path_factory.mktemp("fuzz") / "t.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    try:
        tl = load_trace(path)
    except TraceError:
        return
    assert ((tl.dep_src >= 0) & (tl.dep_src < len(tl))).all()


def test_driver_api_calls_become_host_ops(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "cat": "cuda_driver", "name": n, "pid": 1, "tid": 1, "ts": i * 10, "dur": 2,
         "args": {"correlation": 100 + i}}
        for i, n in enumerate(["cuMemAlloc_v2", "cuCtxSynchronize", "cuGetProcAddress"])
    ] + [_kernel(50, corr=1)]  # fmt: skip
    tl = load_trace(_write(tmp_path, _trace(events)))
    assert [tl.op_kind(r) for r in range(len(tl))] == ["malloc", "device_sync", "kernel"]


# -- streaming, limits and hostile numbers -------------------------------------------------------
def _chunked(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 10_000])
def test_text_split_anywhere_loads_the_same(size: int) -> None:
    # Streaming reads the text a chunk at a time: a value, a number, a string escape or the
    # whitespace between them may be cut at any point.
    events = _small_kineto() + [
        {"ph": "X", "cat": "cpu_op", "name": 'a "q" \\ \u00e9', "ts": 1, "dur": 2}
    ]
    text = json.dumps({"junk": {"a": ["]", "\\"]}, "traceEvents": events}, indent=1)
    whole = read_timelines([text])[0][0]
    split = read_timelines(_chunked(text, size))[0][0]
    assert split.to_dict() == whole.to_dict() and len(whole) == 4


@pytest.mark.parametrize(
    "skipped",
    ['"x"', '[1, [2, {"a": "]"}], 3]', r'{"x": {"y": [1, "\"]"]}}', "[" * 5000 + "]" * 5000,
     r'"a\\"', "{}", r'["\\", "\""]', '{"a": "\u00e9", "b": [[[]]]}'],
)  # fmt: skip
def test_unused_top_level_values_are_skipped_at_any_split(skipped: str) -> None:
    text = '{"junk": ' + skipped + ', "traceEvents": [' + json.dumps(_kernel(0)) + "]}"
    for size in (1, 3, 1000):
        assert len(read_timelines(_chunked(text, size))[0][0]) == 1


def test_device_properties_with_a_list_id(tmp_path: Path) -> None:
    # A non-scalar id was used as a set member: TypeError. It names no device here.
    props = [{"id": [0], "name": "odd"}, {"id": 0, "name": "NVIDIA H200"}]
    tl = load_trace(_write(tmp_path, _trace([_kernel(0)], deviceProperties=props)))
    assert tl.device == "NVIDIA H200"
    tl = load_trace(_write(tmp_path, _trace([_kernel(0)], deviceProperties=[{"id": [0]}])))
    assert tl.device == ""


@pytest.mark.parametrize(
    ("event", "where"),
    [
        ('{"ph": "X", "cat": "kernel", "ts": 1, "dur": ' + "9" * 4301 + "}", "traceEvents[1]"),
        ('{"ph": "s", "id": 1, "pid": 0, "tid": 7, "ts": ' + "9" * 4301 + "}", "traceEvents[1]"),
        ('{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "args": {"bytes": 1' + "0" * 5000 + "}}",
         "traceEvents[1]"),
        ('{"ph": "X", "cat": "kernel", "ts": 1e300, "dur": 1}', "traceEvents[1]: 'ts'"),
        ('{"ph": "X", "cat": "kernel", "ts": 1, "dur": ' + str(2**63) + "}", "traceEvents[1]: 'dur'"),
        ('{"ph": "X", "cat": "kernel", "ts": -1e30, "dur": 1}', "traceEvents[1]: 'ts'"),
        ('{"ph": "B", "cat": "kernel", "pid": 0, "tid": 7, "ts": 1e300}', "traceEvents[1]: 'ts'"),
        ('{"ph": "i", "ts": Infinity}', "traceEvents[1]: 'ts'"),
    ],
)  # fmt: skip
def test_numbers_past_the_time_range_are_refused_by_place(
    tmp_path: Path, event: str, where: str
) -> None:
    text = '{"traceEvents": [' + json.dumps(_kernel(0)) + ", " + event + "]}"
    with pytest.raises(TraceError, match=re.escape(where)):
        load_trace(_write(tmp_path, text))


def test_kept_events_are_limited(tmp_path: Path) -> None:
    p = _write(tmp_path, _trace([_kernel(i, corr=i) for i in range(50)]))
    assert len(load_trace(p, max_kept=50)) == 50
    with pytest.raises(TraceError, match=r"traceEvents\[49\]: more than 49 .*the limit"):
        load_trace(p, max_kept=49)
    # Events that are not kept do not count.
    skipped = [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": i, "dur": 1} for i in range(500)]
    assert len(load_trace(_write(tmp_path, _trace([*skipped, _kernel(0)])), max_kept=1)) == 1


def test_one_value_is_limited_and_the_limit_named() -> None:
    from swimlanes.timeline.formats.trace_json import MAX_VALUE_CHARS

    huge = '{"ph": "X", "name": "' + "x" * (MAX_VALUE_CHARS + 10) + '"}'
    with pytest.raises(TraceError, match=r"traceEvents\[0\]: .*16,777,216-character limit"):
        read_timelines(_chunked('{"traceEvents": [' + huge + "]}", 1 << 20))


def test_skipped_reasons_are_bounded(tmp_path: Path) -> None:
    odd = [
        {"ph": "X", "cat": "gpu_memcpy", "name": f"copy {i}", "ts": i, "dur": 1}
        for i in range(1500)
    ]
    tl = load_trace(_write(tmp_path, _trace([*odd, _kernel(0)])))
    assert len(tl.meta["skipped_events"]) <= 1001
    assert sum(tl.meta["skipped_events"].values()) == 1500
