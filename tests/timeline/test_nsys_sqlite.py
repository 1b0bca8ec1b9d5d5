"""Nsight Systems SQLite exports open as measurements and rebuild as pipelines.

Each captured program (tests/gpu/captures, recorded with CUPTI on an H200) is written here as
the tables ``nsys export --type sqlite`` writes (the columns of Nsight Systems' export schema,
with or without its ENUM tables), so the same recording reaches Swimlanes two ways: the
report must give the timeline and the pipeline that the capture gives.
"""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from swimlanes.services.trace_pipeline import rebuild_file
from swimlanes.timeline.formats.io import load_timeline_any
from swimlanes.timeline.formats.trace_import import load_trace
from swimlanes.timeline.formats.trace_source import TraceError

CAPTURES = Path(__file__).resolve().parents[1] / "gpu" / "captures"
FIXTURES = sorted(CAPTURES.glob("*.capture.json.gz"))

_SCHEMA = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
  shortName INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
  blockZ INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
  copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL,
  end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, eventId INTEGER NOT NULL);
CREATE TABLE TARGET_INFO_CUDA_CONTEXT_INFO (nullStreamId INTEGER NOT NULL,
  hwId INTEGER NOT NULL, vmId INTEGER NOT NULL, processId INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL);
CREATE TABLE TARGET_INFO_CUDA_STREAM (streamId INTEGER NOT NULL, hwId INTEGER NOT NULL,
  vmId INTEGER NOT NULL, processId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  priority INTEGER NOT NULL, flag INTEGER NOT NULL);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT);
"""
# The report's own enumerations, numbered unlike CUPTI so that a reader that ignored them
# would misread every row.
_ENUMS = {
    "ENUM_CUDA_MEMCPY_OPER": {"HTOD": 11, "DTOH": 12, "DTOD": 18, "HTOH": 19, "PTOP": 20},
    "ENUM_CUDA_MEM_KIND": {"PAGEABLE": 31, "PINNED": 32, "DEVICE": 33, "MANAGED": 35},
    "ENUM_CUPTI_SYNC_TYPE": {
        "EVENT_SYNCHRONIZE": 41, "STREAM_WAIT_EVENT": 42, "STREAM_SYNCHRONIZE": 43,
        "CONTEXT_SYNCHRONIZE": 44,
    },
    "ENUM_CUPTI_STREAM_TYPE": {"DEFAULT": 50, "NON_BLOCKING": 51, "NULL": 52},
}  # fmt: skip
_CUPTI = {
    "ENUM_CUDA_MEMCPY_OPER": {"HTOD": 1, "DTOH": 2, "DTOD": 8, "HTOH": 9, "PTOP": 10},
    "ENUM_CUDA_MEM_KIND": {"PAGEABLE": 1, "PINNED": 2, "DEVICE": 3, "MANAGED": 5},
    "ENUM_CUPTI_SYNC_TYPE": {
        "EVENT_SYNCHRONIZE": 1, "STREAM_WAIT_EVENT": 2, "STREAM_SYNCHRONIZE": 3,
        "CONTEXT_SYNCHRONIZE": 4,
    },
    "ENUM_CUPTI_STREAM_TYPE": {"DEFAULT": 0, "NON_BLOCKING": 1, "NULL": 2},
}  # fmt: skip
_SYNC = {"Stream Sync": "STREAM_SYNCHRONIZE", "Event Sync": "EVENT_SYNCHRONIZE",
         "Context Sync": "CONTEXT_SYNCHRONIZE", "Stream Wait Event": "STREAM_WAIT_EVENT"}  # fmt: skip
_COPY_NAME = re.compile(r"Memcpy (\w+) \((\w+) -> (\w+)\)")


def _ns(ts_us: float) -> int:
    return round(ts_us * 1000)


def write_nsys_export(trace: dict[str, Any], path: Path, *, enums: bool) -> None:
    """The Kineto-layout capture ``trace`` as the tables of an Nsight Systems export."""
    ids = _ENUMS if enums else _CUPTI
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA)
    if enums:
        for table, values in ids.items():
            db.execute(f"CREATE TABLE {table} (id INTEGER NOT NULL, name TEXT, label TEXT)")
            db.executemany(
                f"INSERT INTO {table} VALUES (?, ?, ?)",
                [
                    (i, f"CUPTI_{name}", name.replace("_", " ").title())
                    for name, i in values.items()
                ],
            )
    strings: dict[str, int] = {}

    def string(text: str) -> int:
        return strings.setdefault(text, len(strings) + 1)

    base = trace["swimlanesCapture"]["t0_ns"]  # reports hold the clock's own nanoseconds
    for e in trace["traceEvents"]:
        a, start = e["args"], base + _ns(e["ts"])
        end = start + _ns(e["dur"])
        where = (start, end, a.get("device", 0), 1, a.get("stream", -1), a["correlation"], 1)
        if e["cat"] in ("cuda_runtime", "cuda_driver"):
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                (start, end, e["tid"], a["correlation"], string(e["name"])),
            )
            if "stream" in a:  # an event record: CUPTI's CUDA_EVENT record (its own id)
                db.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (0, 1, ?, ?, 1, ?)",
                    (a["stream"], a["correlation"], a["correlation"]),
                )
        elif e["cat"] == "kernel":
            name = string(e["name"])
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (*where, name, name, *a["grid"], *a["block"]),
            )
        elif e["cat"] == "gpu_memcpy":
            kind, src, dst = _COPY_NAME.match(e["name"]).groups()  # type: ignore[union-attr]
            memory = ids["ENUM_CUDA_MEM_KIND"]
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (*where, a["bytes"], ids["ENUM_CUDA_MEMCPY_OPER"][kind.upper()],
                 memory[src.upper()], memory[dst.upper()]),
            )  # fmt: skip
        elif e["cat"] == "gpu_memset":
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,?,?,?,?,?,0,?)",
                (*where, a["bytes"]),
            )
        elif e["cat"] == "cuda_sync":
            sync = ids["ENUM_CUPTI_SYNC_TYPE"][_SYNC[a["cuda_sync_kind"]]]
            event = a.get("wait_on_cuda_event_record_corr_id", -1)
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?,?,?,?,?,?,?,?,?)",
                (*where, sync, event),
            )
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in strings.items()])
    info = trace["swimlanesCapture"]
    db.execute("INSERT INTO TARGET_INFO_CUDA_CONTEXT_INFO VALUES (?, 0, 0, 1, 0, 1)",
               (info["legacy_stream"],))  # fmt: skip
    flags = ids["ENUM_CUPTI_STREAM_TYPE"]
    for sid, stream in info["streams"].items():
        priority = (
            stream["priority"] - (1 << 32) if stream["priority"] >= 1 << 31 else stream["priority"]
        )
        flag = flags[stream["flag"].removeprefix("FLAG_")]
        db.execute("INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (?, 0, 0, 1, 1, ?, ?)",
                   (int(sid), priority, flag))  # fmt: skip
    db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?)", (info["device"],))
    db.commit()
    db.close()


def _trace(fixture: Path) -> dict[str, Any]:
    with gzip.open(fixture, "rt") as f:
        return json.load(f)


@pytest.mark.parametrize("enums", [True, False], ids=["report-enums", "cupti-numbering"])
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name.split(".")[0])
def test_an_export_opens_as_the_measurement_its_capture_gives(
    fixture: Path, enums: bool, tmp_path: Path
) -> None:
    report = tmp_path / "report.sqlite"
    write_nsys_export(_trace(fixture), report, enums=enums)
    got, want = load_trace(report), load_trace(fixture)
    assert len(got) == len(want) > 0
    for column in ("kind", "issue_start", "issue_end", "start", "end", "bytes"):
        assert np.array_equal(getattr(got, column), getattr(want, column)), column
    assert [got.stream_name(i) for i in range(len(got))] == [
        want.stream_name(i) for i in range(len(want))
    ]
    assert np.array_equal(got.dep_src, want.dep_src) and np.array_equal(got.dep_dst, want.dep_dst)
    assert got.device == want.device == "NVIDIA H200"
    assert got.meta.get("legacy_stream") == want.meta.get("legacy_stream")
    assert got.meta.get("stream_flags") == want.meta.get("stream_flags")


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name.split(".")[0])
def test_an_export_rebuilds_as_the_pipeline_its_capture_does(fixture: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.sqlite"
    write_nsys_export(_trace(fixture), report, enums=True)
    got, want = rebuild_file(report, "h200"), rebuild_file(fixture, "h200")
    got_doc, want_doc = got.rebuilt.pipeline.to_dict(), want.rebuilt.pipeline.to_dict()
    assert got_doc["program"] == want_doc["program"]
    assert got_doc["streams"] == want_doc["streams"]
    assert got.simulated.makespan_ns == want.simulated.makespan_ns


def test_a_database_that_is_not_an_export_is_refused_clearly(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE notes (text TEXT)")
    db.commit()
    db.close()
    with pytest.raises(TraceError, match="no GPU activity in the Nsight Systems export"):
        load_timeline_any(other)


def test_a_truncated_database_is_refused_clearly(tmp_path: Path) -> None:
    report = tmp_path / "report.sqlite"
    write_nsys_export(_trace(FIXTURES[0]), report, enums=True)
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(report.read_bytes()[:3000])
    with pytest.raises(TraceError) as err:
        load_timeline_any(broken)
    assert "Traceback" not in str(err.value)


def test_an_exports_nvtx_ranges_label_the_rebuilt_ops(tmp_path: Path) -> None:
    trace = _trace(CAPTURES / "cupy_streams-overlap.capture.json.gz")
    report = tmp_path / "report.sqlite"
    write_nsys_export(trace, report, enums=True)
    base = trace["swimlanesCapture"]["t0_ns"]
    db = sqlite3.connect(report)
    db.execute("CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, "
               "eventType INTEGER NOT NULL, text TEXT, textId INTEGER)")  # fmt: skip
    db.execute("INSERT INTO StringIds VALUES (9999, 'iteration')")
    db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, 9999)", (base, base + 10**9))
    db.execute("INSERT INTO NVTX_EVENTS VALUES (?, NULL, 34, 'a mark', NULL)", (base,))
    db.commit()
    db.close()
    rebuilt = rebuild_file(report, "h200").rebuilt.pipeline
    calls = [op for op in rebuilt.program if op.op != "host"]
    assert calls and all((op.label or "").startswith("iteration: ") for op in calls)
