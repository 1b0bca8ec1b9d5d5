"""CUPTI activity records of a captured program, written as a PyTorch-profiler-style trace.

``swimlanes capture`` records the program's CUDA API calls and GPU activity with CUPTI (see
:mod:`swimlanes.gpu.capture`) as plain dicts, one per record; :func:`capture_trace` turns them
into Chrome Trace Event JSON in the layout PyTorch's profiler (Kineto) writes, which Perfetto
opens and which Swimlanes' trace import reads (``swimlanes.timeline.formats.trace_import``):

* each runtime or driver API call is a ``cuda_runtime`` / ``cuda_driver`` slice on its host
  thread, with its ``correlation`` id (a driver call made inside a runtime call on the same
  thread is left out: the runtime call stands for it); an event record call carries the
  ``stream`` it was recorded on (from the CUDA_EVENT record);
* each kernel, memcpy and memset is a ``kernel`` / ``gpu_memcpy`` / ``gpu_memset`` slice on
  ``stream N`` with the correlation id of its call, grid and block, bytes, and copies named
  as Kineto names them ("Memcpy HtoD (Pageable -> Device)");
* each synchronization is a ``cuda_sync`` slice: stream, event and context syncs, and stream
  waits on an event with ``wait_on_stream`` and ``wait_on_cuda_event_record_corr_id`` (the
  latest record of that event before the wait).

Times are nanoseconds from the first record (``displayTimeUnit`` ns, ``ts`` in us with three
decimals), so no precision is lost. The top-level ``swimlanesCapture`` object names the legacy
default stream (``legacy_stream``), each created stream's flags and priority, the GPU, the
host, and the program's command line. No CUPTI import here: tests feed it recorded dicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: A Kineto-layout trace's top-level key for what Swimlanes adds.
CAPTURE_KEY = "swimlanesCapture"

_COPY_KINDS = {"HTOD": "HtoD", "DTOH": "DtoH", "DTOD": "DtoD", "PTOP": "PtoP", "HTOH": "HtoH"}
_MEMORY = {"PAGEABLE": "Pageable", "PINNED": "Pinned", "DEVICE": "Device", "MANAGED": "Managed"}
_SYNC_NAMES = {
    "STREAM_SYNCHRONIZE": "Stream Sync",
    "EVENT_SYNCHRONIZE": "Event Sync",
    "CONTEXT_SYNCHRONIZE": "Context Sync",
    "STREAM_WAIT_EVENT": "Stream Wait Event",
}


def _us(ns: int, t0: int) -> float:
    return round((ns - t0) / 1000.0, 3)


def capture_trace(records: dict[str, list[dict[str, Any]]], info: dict[str, Any]) -> dict[str, Any]:
    """The trace document of a capture: ``records`` by kind ("api", "kernel", "memcpy",
    "memset", "sync", "cuda_event", "stream"), each a dict of the CUPTI record's fields;
    ``info`` the capture's own facts (legacy_stream, device, host, argv...)."""
    timed = [
        r for kind in ("api", "kernel", "memcpy", "memset", "sync") for r in records.get(kind, [])
    ]
    t0 = min((int(r["start"]) for r in timed if r.get("start")), default=0)
    pid = int(info.get("pid", 0))
    events: list[dict[str, Any]] = []
    event_streams = {
        int(e["correlation_id"]): int(e["stream_id"]) for e in records.get("cuda_event", [])
    }
    events += _api_events(records.get("api", []), t0, pid, event_streams)
    events += _gpu_events(records, t0)
    events += _sync_events(records.get("sync", []), records.get("cuda_event", []), t0)
    events.sort(key=lambda e: (e["ts"], e["pid"], e["tid"]))
    used = {e["args"]["stream"] for e in events if isinstance(e["args"].get("stream"), int)}
    streams = {
        str(int(s["stream_id"])): {
            "flag": str(s.get("flag", "")).removeprefix("FLAG_"),
            "priority": _signed32(int(s.get("priority", 0))),
        }
        for s in records.get("stream", [])
        if int(s["stream_id"]) in used  # the streams the kept work ran on
    }
    return {
        "schemaVersion": 1,
        "displayTimeUnit": "ns",
        "deviceProperties": [{"id": 0, "name": str(info.get("device", ""))}],
        CAPTURE_KEY: {**info, "streams": streams, "t0_ns": t0},
        "traceEvents": events,
    }


def _signed32(value: int) -> int:
    """CUPTI reports a stream priority as uint32 (-1 as 4294967295)."""
    return value - (1 << 32) if value >= 1 << 31 else value


def _api_events(
    calls: list[dict[str, Any]], t0: int, pid: int, event_streams: dict[int, int]
) -> list[dict[str, Any]]:
    out = []
    runtime_spans: dict[int, list[tuple[int, int]]] = {}
    for c in calls:
        if c.get("domain") == "runtime":
            runtime_spans.setdefault(int(c["thread_id"]), []).append(
                (int(c["start"]), int(c["end"]))
            )
    for spans in runtime_spans.values():
        spans.sort()
    for c in calls:
        start, end, tid = int(c["start"]), int(c["end"]), int(c["thread_id"])
        driver = c.get("domain") != "runtime"
        if driver and _inside(runtime_spans.get(tid, []), start, end):
            continue  # made by a runtime call: that call stands for it
        corr = int(c["correlation_id"])
        args: dict[str, Any] = {"correlation": corr, "cbid": int(c.get("cbid", 0))}
        if corr in event_streams:
            args["stream"] = event_streams[corr]
        out.append(
            {"ph": "X", "cat": "cuda_driver" if driver else "cuda_runtime", "name": str(c["name"]),
             "pid": pid, "tid": tid, "ts": _us(start, t0), "dur": _us(end, start), "args": args}
        )  # fmt: skip
    return out


def _inside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether [start, end] lies within one of the sorted spans."""
    lo, hi = 0, len(spans)
    while lo < hi:  # the last span starting at or before ``start``
        mid = (lo + hi) // 2
        if spans[mid][0] <= start:
            lo = mid + 1
        else:
            hi = mid
    return lo > 0 and spans[lo - 1][1] >= end


def _gpu_events(records: dict[str, list[dict[str, Any]]], t0: int) -> list[dict[str, Any]]:
    out = []
    for k in records.get("kernel", []):
        args = {"correlation": int(k["correlation_id"]), "stream": int(k["stream_id"]), "device": _device(k),
                "grid": [int(k["grid_x"]), int(k["grid_y"]), int(k["grid_z"])],
                "block": [int(k["block_x"]), int(k["block_y"]), int(k["block_z"])]}  # fmt: skip
        out.append(_gpu_slice("kernel", str(k.get("name", "kernel")), k, t0, args))
    for m in records.get("memcpy", []):
        kind = _COPY_KINDS.get(str(m.get("copy_kind")), str(m.get("copy_kind")))
        src = _MEMORY.get(str(m.get("src_kind")), "Unknown")
        dst = _MEMORY.get(str(m.get("dst_kind")), "Unknown")
        args = {"correlation": int(m["correlation_id"]), "stream": int(m["stream_id"]),
                "bytes": int(m["bytes"]), "device": _device(m)}  # fmt: skip
        out.append(_gpu_slice("gpu_memcpy", f"Memcpy {kind} ({src} -> {dst})", m, t0, args))
    for m in records.get("memset", []):
        args = {"correlation": int(m["correlation_id"]), "stream": int(m["stream_id"]),
                "bytes": int(m["bytes"]), "device": _device(m)}  # fmt: skip
        out.append(_gpu_slice("gpu_memset", "Memset (Device)", m, t0, args))
    return out


def _device(record: dict[str, Any]) -> int:
    """The record's device (a capture records one device and leaves it out: 0)."""
    return int(record.get("device_id", 0))


def _gpu_slice(cat: str, name: str, r: dict[str, Any], t0: int, args: dict) -> dict[str, Any]:
    start, end = int(r["start"]), int(r["end"])
    return {"ph": "X", "cat": cat, "name": name, "pid": _device(r), "tid": int(r["stream_id"]),
            "ts": _us(start, t0), "dur": _us(end, start), "args": args}  # fmt: skip


def _sync_events(
    syncs: list[dict[str, Any]], cuda_events: Iterable[dict[str, Any]], t0: int
) -> list[dict[str, Any]]:
    """Syncs; a wait or event sync names the latest record of its event made before it."""
    records: dict[int, list[tuple[int, int]]] = {}
    for e in cuda_events:  # correlation ids grow with call order
        records.setdefault(int(e["event_id"]), []).append(
            (int(e["correlation_id"]), int(e["stream_id"]))
        )
    for v in records.values():
        v.sort()
    out = []
    for s in syncs:
        name = _SYNC_NAMES.get(str(s.get("type")))
        if name is None:
            continue
        corr = int(s["correlation_id"])
        args: dict[str, Any] = {"correlation": corr, "cuda_sync_kind": name, "device": _device(s),
                                "stream": int(s.get("stream_id", -1))}  # fmt: skip
        event = s.get("cuda_event_id")
        made = [r for r in records.get(int(event), []) if r[0] < corr] if event is not None else []
        if made:
            args["wait_on_cuda_event_record_corr_id"] = made[-1][0]
            args["wait_on_stream"] = made[-1][1]
        if name in ("Event Sync", "Context Sync"):
            args["stream"] = -1
        start, end = int(s["start"]), int(s["end"])
        out.append(
            {"ph": "X", "cat": "cuda_sync", "name": name, "pid": _device(s), "tid": args["stream"],
             "ts": _us(start, t0), "dur": _us(end, start), "args": args}
        )  # fmt: skip
    return out
