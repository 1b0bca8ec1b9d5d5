"""The --json rows built a column at a time (timeline.json_rows): the same rows, and the same
text, as the row-by-row code they replace wrote, with orjson and without it."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from swimlanes.engine import simulate
from swimlanes.model.document import OP_KINDS
from swimlanes.model.io import pipeline_from_dict
from swimlanes.resources import measurements_dir
from swimlanes.services.json_text import json_text
from swimlanes.services.runs import load_trace
from swimlanes.services.simulation import simulate_file, simulation_json
from swimlanes.timeline import json_rows
from swimlanes.timeline.metrics import compute_metrics
from swimlanes.timeline.timeline import NO_TIME, Timeline

ROW = json.JSONEncoder(separators=(", ", ": "))
#: Labels the writers must escape as the json module does (ASCII only, \\uXXXX, surrogate
#: pairs; DEL escaped too) and a label that looks like the rows' own separators.
LABELS = [
    "caf\u00e9", "\u4e2d\u6587", "emoji \U0001f600", "line\u2028sep", "tab\tnew\nline",
    "del\x7f", 'quote " and \\ backslash', '}, {"index": 9, "op": "x', "lone \ud800", "",
]  # fmt: skip


def reference_rows(tl: Timeline) -> list[dict[str, Any]]:
    """The rows as Timeline.ops_json built them one by one before the column-wise code."""
    t0 = tl.t0

    def us(v: int) -> float | None:
        return None if v == NO_TIME else round((v - t0) / 1000.0, 3)

    rows = []
    for r in range(len(tl)):
        row: dict[str, Any] = {
            "index": int(tl.index[r]),
            "op": OP_KINDS[int(tl.kind[r])],
            "stream": tl.stream_name(r),
            "label": tl.labels[r],
            "engine": tl.engine_name(r),
            "issue_us": us(int(tl.issue_start[r])),
            "issue_end_us": us(int(tl.issue_end[r])),
            "start_us": us(int(tl.start[r])),
            "end_us": us(int(tl.end[r])),
        }
        if int(tl.bytes[r]):
            row["bytes"] = int(tl.bytes[r])
        if tl.device_names:
            row["device"] = tl.host_device_name(r)
        if tl.thread_names:
            row["thread"] = tl.host_thread_name(r)
        if tl.start_spread is not None and tl.end_spread is not None:
            s, e = int(tl.start_spread[r]), int(tl.end_spread[r])
            row["start_spread_us"] = None if s == NO_TIME else s / 1000.0
            row["end_spread_us"] = None if e == NO_TIME else e / 1000.0
        rows.append(row)
    return rows


def _labelled() -> Timeline:
    program = [
        {"op": "h2d", "stream": "s0", "bytes": 4096 * (k + 1), "label": label}
        for k, label in enumerate(LABELS)
    ]
    program += [
        {"op": "host", "duration_us": 2},
        {"op": "event_record", "stream": "s0", "event": "e"},
    ]
    doc = {
        "format": "swimlanes-pipeline", "version": 1, "name": "labels",
        "streams": [{"name": "s\u00e9"}, {"name": "s0"}], "program": program,
    }  # fmt: skip
    return simulate(pipeline_from_dict(doc), "h200")


def _far() -> Timeline:
    """Times far from t0 (past the range where round(x, 3) is x itself), and missing ones."""
    rng = random.Random(3)
    n = 200
    starts = [rng.randrange(0, 2**62) for _ in range(n)]
    starts[:6] = [0, 8 * 10**15 - 1, 8 * 10**15, 2**53 + 1, 2**62 - 1, 123456789]
    col = np.array(starts, dtype=np.int64)
    ends = col.copy()
    ends[::7] = NO_TIME
    zeros = np.zeros(n, dtype=np.int64)
    return Timeline(
        index=np.arange(n), kind=np.zeros(n, dtype=np.int8), stream=np.full(n, -1, np.int16),
        engine=np.full(n, -1, np.int16), issue_start=zeros, issue_end=col, start=col, end=ends,
        solo_ns=zeros, bytes=np.arange(n) % 3, labels=["x"] * n,
        start_spread=np.where(np.arange(n) % 5 == 0, NO_TIME, col // 7),
        end_spread=np.arange(n, dtype=np.int64) * 333,
    )  # fmt: skip


def timelines() -> dict[str, Timeline]:
    out = {name: simulate_file(name, None)[1] for name in
           ("chunked-overlap", "peer-copy-split", "per-thread-default-stream")}  # fmt: skip
    out["measured"] = load_trace(Path(measurements_dir() / "ping-pong.h200.json"))[0]
    out["labels"] = _labelled()
    out["far"] = _far()
    out["empty"] = Timeline()
    return out


@pytest.fixture(params=["orjson", "json"])
def writer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of writing numbers: orjson (when installed) and the json module alone."""
    if request.param == "json":
        monkeypatch.setattr(json_rows, "orjson", None)
    elif json_rows.orjson is None:
        pytest.skip("orjson is not installed")
    return str(request.param)


def test_rows_are_the_rows_the_row_by_row_code_built() -> None:
    for name, tl in timelines().items():
        rows = tl.ops_json()
        assert rows == reference_rows(tl), name
        # The same keys in the same order (the JSON text depends on it).
        assert [list(r) for r in rows] == [list(r) for r in reference_rows(tl)], name


def test_row_text_is_what_the_json_encoder_writes_of_each_row(writer: str) -> None:
    for name, tl in timelines().items():
        expected = ",\n    ".join(ROW.encode(row) for row in reference_rows(tl))
        assert json_rows.op_rows_text(tl, ",\n    ") == expected, (name, writer)


def test_simulate_json_text_is_the_same_with_rows_as_text_or_as_dicts(writer: str) -> None:
    for name, tl in timelines().items():
        if not len(tl) or name in ("far", "measured"):
            continue
        pipeline = simulate_file("two-streams", None)[0]
        m = compute_metrics(tl)
        old = json_text(simulation_json(pipeline, tl, m))
        new = json_text(simulation_json(pipeline, tl, m, rows_as_text=True))
        assert new == old, name
        assert new.isascii()


def test_numbers_are_written_as_repr_writes_them(writer: str) -> None:
    # What rows hold: ints, None, and int64 nanoseconds over 1000 (0, or 0.001 to 9.3e15).
    rng = random.Random(7)
    floats = [round(rng.uniform(0, 10 ** rng.randint(0, 16)), 3) for _ in range(20_000)]
    floats += [rng.randrange(-(2**63), 2**63) / 1000.0 for _ in range(20_000)]
    floats += [float(f"{rng.uniform(1, 9.99):.{rng.randint(1, 17)}f}e{rng.randint(-4, 15)}")
               for _ in range(20_000)]  # fmt: skip
    floats += [0.0, 0.001, 1e-4, 1.0, 100.0, 1e15, 9999999999999998.0, (2**63 - 1) / 1000.0]
    floats += [10.0**k for k in range(-4, 16)] + [123456789012.345, 4611686018427387.903]
    ints = [0, 1, -1, 2**40, 2**63 - 1, -(2**63)]
    values = [*floats, *ints, None]
    expected = [json.dumps(v) for v in values]
    assert json_rows.number_texts(values) == expected
    assert json_rows.number_texts([]) == []


def test_time_values_are_pythons_round_of_the_quotient() -> None:
    rng = random.Random(11)
    ns = [rng.randrange(0, 2**62) for _ in range(20_000)]
    ns += [rng.randrange(0, 10**13) for _ in range(20_000)]
    ns += [8 * 10**15 + d for d in range(-50, 50)] + [2**53 + d for d in range(-5, 5)]
    t0 = 1234
    col = np.array([v + t0 for v in ns] + [NO_TIME], dtype=np.int64)
    expected = [round(v / 1000.0, 3) for v in ns] + [None]
    assert json_rows.time_values(col, t0) == expected
