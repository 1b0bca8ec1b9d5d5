"""Open Chrome Trace Event JSON and PyTorch profiler (Kineto) traces as a measured Timeline.

Safety: the file is only ever parsed as JSON (nothing in it is evaluated). It is read in
chunks (gunzipped as it goes) and never held whole: memory grows with what import keeps (at
most ``max_kept`` events or rows), not with the size of the text, and reading stops past
``max_bytes`` of text. Every malformed event is reported by its position
(``traceEvents[12]: 'ts' must be a number``).

What becomes a row: GPU activity (``kernel``, ``gpu_memcpy``, ``gpu_memset``, ``cuda_sync``)
on a per-stream row named ``stream N``; its CUDA runtime/driver call (linked by correlation id)
gives the row's host issue span. Runtime calls with no GPU record that still matter to a
schedule (cudaMalloc, cudaFree, syncs, cudaEventRecord, cudaStreamWaitEvent,
cudaLaunchHostFunc, and their driver API twins) become host-only rows. Rows are in host issue
order, which is the program order of a single-threaded host. Copies are typed from the
event name ("Memcpy HtoD (Pageable -> Device)"); pageable ones are listed in
``meta["pageable_rows"]``; ``meta["calls"]`` names each row's runtime or driver call ("" for
GPU work with none) and ``meta["kernel_shapes"]`` each kernel row's launch shape
(``{"row": [blocks, threads]}``, where the trace gives grid and block);
``meta["record_streams"]`` the stream each awaited event record was made on (``{"row":
"stream 7"}``), from the waits that name it. Flow events between two different rows become ``flow`` deps
(Kineto's ``ac2g`` flows only repeat the correlation ids, so they add none); a Kineto event
wait that names its record becomes an ``event`` dep. Also opens our own exported Chrome
traces (the measured process, else the first; :func:`load_timelines` gives every process),
``swimlanes-timeline`` files and saved runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from swimlanes.model.document import OP_KINDS, Pipeline
from swimlanes.timeline.formats import chrome_trace
from swimlanes.timeline.formats.nsys_sqlite import SQLITE_MAGIC, is_sqlite, load_nsys_trace
from swimlanes.timeline.formats.run_format import RUN_FORMAT, run_from_dict
from swimlanes.timeline.formats.trace_events import EventCollector, hashable
from swimlanes.timeline.formats.trace_json import JsonStream, parse_document
from swimlanes.timeline.formats.trace_source import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_KEPT,
    Cancel,
    Progress,
    TraceError,
    text_chunks,
    trace_name,
)
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME, TIMELINE_FORMAT, Timeline

#: Engine lane of each device op kind in imported traces: the simulator's and the executor's
#: names, so imported and simulated timelines get the same rows (D2D copies and memsets run
#: on the SMs).
ENGINE_OF_KIND: dict[str, str] = {
    "h2d": "H2D",
    "d2h": "D2H",
    "d2d": "Compute",
    "memset": "Compute",
    "kernel": "Compute",
}
_ENGINE_ORDER = ("H2D", "D2H", "Compute")

# Runtime calls that are ops of their own when no GPU record carries them.
_HOST_CALLS = {
    "cudaMalloc": "malloc",
    "cudaFree": "free",
    "cudaDeviceSynchronize": "device_sync",
    "cudaStreamSynchronize": "stream_sync",
    "cudaEventSynchronize": "event_sync",
    "cudaEventRecord": "event_record",
    "cudaEventRecordWithFlags": "event_record",
    "cudaStreamWaitEvent": "event_wait",
    "cudaLaunchHostFunc": "host_func",
    "cuMemAlloc": "malloc",
    "cuMemFree": "free",
    "cuCtxSynchronize": "device_sync",
    "cuStreamSynchronize": "stream_sync",
    "cuEventSynchronize": "event_sync",
    "cuEventRecord": "event_record",
    "cuEventRecordWithFlags": "event_record",
    "cuStreamWaitEvent": "event_wait",
    "cuLaunchHostFunc": "host_func",
}
# Driver entry points carry version and per-thread-stream suffixes (cuMemAlloc_v2).
_CALL_SUFFIX = re.compile(r"(_v\d+|_ptsz|_ptds)+$")
_MAX_STREAMS = np.iinfo(np.int16).max
# Named ranges (NVTX, record_function) a trace may give: labels of the rebuilt pipeline's ops.
MAX_NVTX_RANGES = 100_000
# Processes of a Swimlanes-exported trace (one per timeline) opened at most.
_MAX_TIMELINES = 64


# -- building the Timeline ----------------------------------------------------------------------
def load_trace(
    path: str | Path,
    *,
    progress: Progress = None,
    cancel: Cancel = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_kept: int = DEFAULT_MAX_KEPT,
) -> Timeline:
    """Open a Chrome Trace Event / Kineto trace (gzipped or not), our own exported Chrome trace
    (its measured timeline), a ``swimlanes-timeline`` file or a saved run (its timeline).

    ``progress`` gets fractions in [0, 1]; ``cancel`` returning True stops the load with
    :class:`TraceCancelled`. Raises :class:`TraceError` for anything malformed, or past the
    limits: ``max_bytes`` of text, ``max_kept`` events (or rows) kept.
    """
    timelines, _ = load_timelines(
        path, progress=progress, cancel=cancel, max_bytes=max_bytes, max_kept=max_kept
    )
    return timelines[0]


def load_timelines(
    path: str | Path,
    *,
    progress: Progress = None,
    cancel: Cancel = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_kept: int = DEFAULT_MAX_KEPT,
) -> tuple[list[Timeline], Pipeline | None]:
    """:func:`load_trace`, but every timeline of the file (several only in a Chrome trace that
    Swimlanes exported with several: the measured one first, then the others in the file's
    order) and, for a saved run, the pipeline it measured."""
    if _is_nsys_export(path):
        timelines, pipeline = [timeline_of_trace(load_nsys_trace(path), max_kept=max_kept)], None
    else:
        chunks = text_chunks(path, max_bytes=max_bytes, progress=progress, cancel=cancel)
        timelines, pipeline = read_timelines(chunks, max_kept=max_kept)
    for tl in timelines:
        tl.name = tl.name or trace_name(path)
    if progress:
        progress(1.0)
    return timelines, pipeline


def read_timelines(
    chunks: Iterable[str], *, max_kept: int = DEFAULT_MAX_KEPT
) -> tuple[list[Timeline], Pipeline | None]:
    """:func:`load_timelines` on text given a chunk at a time."""
    sink = EventCollector(max_kept)
    top = parse_document(JsonStream(iter(chunks)), sink.add, max_rows=max_kept)
    sink.close()
    fmt = top.get("format")
    if fmt in (TIMELINE_FORMAT, RUN_FORMAT):
        timeline, pipeline = run_from_dict(top)
        return [timeline], pipeline
    if fmt == "swimlanes-pipeline":
        raise TraceError("a swimlanes-pipeline file is not a trace (simulate or run it first)")
    if isinstance(fmt, str) and fmt.startswith("swimlanes-"):
        raise TraceError(f"a {fmt} file is not a trace")
    if "traceEvents" not in top:
        raise TraceError("not a trace: no 'traceEvents' list")
    if top["traceEvents"] is not True:
        raise TraceError("'traceEvents' must be a list")
    if sink.gpu:
        return [_kineto_timeline(sink, top)], None
    if sink.ours:
        return _our_timelines(sink, top), None
    raise TraceError(
        f"no GPU activity in the trace ({sink.count} events, none of category kernel, "
        "gpu_memcpy, gpu_memset or cuda_sync)"
    )


def timeline_of_trace(doc: dict[str, Any], *, max_kept: int = DEFAULT_MAX_KEPT) -> Timeline:
    """The timeline of a Kineto-layout trace document already in memory (an Nsight Systems
    export read by :mod:`nsys_sqlite`)."""
    sink = EventCollector(max_kept)
    for n, event in enumerate(doc.get("traceEvents", [])):
        sink.add(n, event)
    sink.close()
    if not sink.gpu:
        raise TraceError("no GPU activity in the trace")
    return _kineto_timeline(sink, {**doc, "traceEvents": True})


def _is_nsys_export(path: str | Path) -> bool:
    """Whether ``path`` is an SQLite database (Nsight Systems' export); False if unreadable
    (the text reader then says why)."""
    try:
        with open(path, "rb") as f:
            return is_sqlite(f.read(len(SQLITE_MAGIC)))
    except (OSError, ValueError):
        return False


def _our_timelines(sink: EventCollector, top: dict[str, Any]) -> list[Timeline]:
    """One timeline per process of a trace Swimlanes exported: the measured one first."""
    ops: dict[Any, list[dict[str, Any]]] = {}
    # A multi-device timeline has a process per device: its events join its first device's.
    joined = chrome_trace.device_pids(top)
    for e in sink.ours:
        e["pid"] = joined.get(e["pid"], e["pid"])
        ops.setdefault(e["pid"], []).append(e)
    if len(ops) > _MAX_TIMELINES:
        raise TraceError(f"Swimlanes ops in {len(ops):,} processes: more than {_MAX_TIMELINES}")
    flows: dict[Any, list[tuple]] = {}
    for f in sink.flows:
        f = (f[0], f[1], joined.get(f[2], f[2]), *f[3:]) if f[2] in joined else f
        flows.setdefault(f[2], []).append(f)
    try:
        timelines = [
            chrome_trace.timeline_from_events(ops[pid], top, flows.get(pid, []))
            for pid in sorted(ops, key=str)
        ]
    except (ValueError, TypeError, KeyError, OverflowError) as err:
        raise TraceError(f"malformed Swimlanes trace: {err}") from None
    first = next((i for i, tl in enumerate(timelines) if tl.source == "measured"), 0)
    return [timelines[first], *timelines[:first], *timelines[first + 1 :]]


def _stream_names(keys: list[tuple]) -> dict[tuple, str]:
    devices = {d for d, _ in keys}
    names = {}
    for d, s in sorted(keys, key=lambda k: (str(k[0]), k[1])):
        names[(d, s)] = f"stream {s}" if len(devices) == 1 else f"GPU {d} stream {s}"
    return names


class _Rows:
    """Rows of an imported trace as parallel lists, before they are sorted into a Timeline."""

    def __init__(self) -> None:
        # (kind, stream, engine, issue_start, issue_end, start, end, bytes, label)
        self.rows: list[tuple] = []
        self.threads: list[tuple[tuple, tuple | None]] = []  # (device thread, host thread)
        self.corr_row: dict[Any, int] = {}
        self.pageable: list[int] = []
        self.waits: list[tuple[int, Any]] = []  # (row, correlation id of the awaited record)
        self.calls: list[str] = []  # the runtime or driver call of each row ("" if none)
        self.shapes: dict[int, tuple[int, int]] = {}  # kernel row -> (blocks, threads)
        self.record_streams: dict[Any, tuple] = {}  # record correlation -> (device, stream)

    def add_gpu(self, sink: EventCollector, stream_id: dict, engine_id: dict) -> None:
        used = set()
        for _n, kind, skey, ts, dur, name, corr, nbytes, extra, thread in sink.gpu:
            call = sink.runtime.get(corr) if corr is not None else None
            issue = (call[0], call[0] + call[1]) if call else (NO_TIME, NO_TIME)
            engine = engine_id.get(ENGINE_OF_KIND.get(kind), -1)
            row = len(self.rows)
            self.rows.append(
                (kind, stream_id.get(skey, -1), engine, *issue, ts, ts + dur, nbytes, name)
            )
            self.threads.append((thread, (call[3], call[4]) if call else None))
            self.calls.append(call[2] if call else "")
            if "blocks" in extra:
                self.shapes[row] = (extra["blocks"], extra["threads"])
            if call:
                used.add(corr)
            if corr is not None:
                self.corr_row[corr] = row
            if extra.get("host_memory") == "pageable":
                self.pageable.append(row)
            if extra.get("record_corr") is not None:
                self.waits.append((row, extra["record_corr"]))
                if type(extra.get("record_stream")) is int:
                    self.record_streams[extra["record_corr"]] = (skey[0], extra["record_stream"])
        by_stream = {s: i for (_, s), i in stream_id.items()}
        for key in sink.runtime_order:
            ts, dur, name, pid, tid = sink.runtime[key]
            host_kind = _HOST_CALLS.get(_CALL_SUFFIX.sub("", name))
            if key in used or host_kind is None:
                continue
            self.corr_row[key] = len(self.rows)
            stream = by_stream.get(sink.runtime_stream.get(key, -1), -1)
            self.rows.append((host_kind, stream, -1, ts, ts + dur, NO_TIME, NO_TIME, 0, name))
            self.threads.append(((None, None), (pid, tid)))
            self.calls.append(name)


def _kineto_timeline(sink: EventCollector, top: dict[str, Any]) -> Timeline:
    stream_keys = sorted({g[2] for g in sink.gpu if g[2][1] >= 0}, key=lambda k: (str(k[0]), k[1]))
    if len(stream_keys) > _MAX_STREAMS:
        raise TraceError(f"{len(stream_keys)} streams: more than the {_MAX_STREAMS} supported")
    stream_name = _stream_names(stream_keys)
    present = {ENGINE_OF_KIND.get(g[1]) for g in sink.gpu}
    engines = [e for e in _ENGINE_ORDER if e in present]
    device = _device_name(top, sink)
    t = _Rows()
    t.add_gpu(
        sink, {k: i for i, k in enumerate(stream_keys)}, {e: i for i, e in enumerate(engines)}
    )
    sink.release_records()  # they are rows now: drop them before the columns are made

    cols = list(zip(*t.rows, strict=True))
    issue_s = np.asarray(cols[3], dtype=np.int64)
    start = np.asarray(cols[5], dtype=np.int64)
    # Host issue order (device start for rows with no host call) is the program order.
    order = np.argsort(np.where(issue_s != NO_TIME, issue_s, start), kind="stable")
    new_row = np.empty(len(order), dtype=np.int64)
    new_row[order] = np.arange(len(order))
    deps = _event_deps(t.waits, t.corr_row) + _flow_deps(sink.flows, t.rows, t.threads)
    dep = np.asarray(deps, dtype=np.int64).reshape(-1, 3)

    def col(k: int, dtype: Any) -> np.ndarray:
        return np.asarray(cols[k], dtype=dtype)[order]

    return Timeline(
        index=np.arange(len(order), dtype=np.int64),
        kind=np.asarray([OP_KINDS.index(k) for k in cols[0]], dtype=np.int8)[order],
        stream=col(1, np.int16),
        engine=col(2, np.int16),
        issue_start=issue_s[order],
        issue_end=col(4, np.int64),
        start=start[order],
        end=col(6, np.int64),
        solo_ns=np.full(len(order), NO_TIME, dtype=np.int64),
        bytes=col(7, np.int64),
        labels=[cols[8][r] for r in order],
        stream_names=[stream_name[k] for k in stream_keys],
        engine_names=engines,
        dep_src=new_row[dep[:, 0]].astype(np.int32),
        dep_dst=new_row[dep[:, 1]].astype(np.int32),
        dep_kind=dep[:, 2].astype(np.int8),
        source="measured",
        device=device,
        meta={
            "trace_format": "kineto" if "deviceProperties" in top else "chrome",
            "events": sink.count,
            "skipped_events": sink.skipped,
            "pageable_rows": sorted(int(new_row[r]) for r in t.pageable),
            "calls": [t.calls[r] for r in order.tolist()],
            "kernel_shapes": {
                str(int(new_row[r])): list(shape) for r, shape in sorted(t.shapes.items())
            },
            **_annotation_meta(sink),
            **_capture_meta(top, stream_name),
            **_host_thread_meta([t.threads[r][1] for r in order.tolist()]),
            "record_streams": {
                str(int(new_row[t.corr_row[c]])): stream_name[key]
                for c, key in t.record_streams.items()
                if c in t.corr_row and key in stream_name
            },
        },
    )


def _annotation_meta(sink: EventCollector) -> dict[str, Any]:
    """A PyTorch trace's record_function ranges, which label the ops of its rebuilt pipeline
    (``meta["ranges"]``; a capture's NVTX ranges take their place)."""
    kept = sink.annotations[:MAX_NVTX_RANGES]
    return {"ranges": [[name, s, e] for name, s, e in kept]} if kept else {}


def _capture_meta(top: dict[str, Any], stream_name: dict[tuple, str]) -> dict[str, Any]:
    """What ``swimlanes capture`` adds to a trace (``swimlanesCapture``): which stream is the
    legacy default stream, each created stream's flags and priority, the host and command."""
    info = top.get("swimlanesCapture")
    if not isinstance(info, dict):
        return {}
    names = {s: name for (_, s), name in stream_name.items()}
    out: dict[str, Any] = {"capture": {k: info[k] for k in ("argv", "date", "range") if k in info}}
    if isinstance(info.get("host"), dict):
        out["host"] = info["host"]  # compare then finds this host's calibration
    t0, ranges = info.get("t0_ns"), info.get("nvtx_ranges")
    if type(t0) is int and isinstance(ranges, list):  # NVTX ranges, on the timeline's clock
        out["ranges"] = [
            [str(r[0]), r[1] - t0, r[2] - t0]
            for r in ranges[:MAX_NVTX_RANGES]
            if isinstance(r, list) and len(r) == 3 and all(type(v) is int for v in r[1:])
        ]
    legacy = info.get("legacy_stream")
    if type(legacy) is int and legacy in names:
        out["legacy_stream"] = names[legacy]
    streams = info.get("streams")
    if isinstance(streams, dict):
        out["stream_flags"] = {
            names[int(sid)]: _stream_flags(value)
            for sid, value in streams.items()
            if isinstance(sid, str)
            and sid.isdigit()
            and int(sid) in names
            and isinstance(value, dict)
        }
    return out


def _host_thread_meta(threads: list[tuple | None]) -> dict[str, Any]:
    """``meta["host_threads"]``: per row, the host thread ("pid:tid") that made its call ("":
    none), only when the calls came from several threads (each replays as a thread of its own)."""
    names = ["" if t is None else f"{t[0]}:{t[1]}" for t in threads]
    return {"host_threads": names} if len(set(names) - {""}) > 1 else {}


def _stream_flags(value: dict[str, Any]) -> dict[str, Any]:
    """A created stream's flag (DEFAULT, NON_BLOCKING) and signed priority: CUPTI names the
    flag FLAG_DEFAULT and reports the priority as uint32."""
    priority = value.get("priority")
    priority = priority if type(priority) is int else 0
    if priority >= 1 << 31:
        priority -= 1 << 32
    return {"flag": str(value.get("flag", "")).removeprefix("FLAG_"), "priority": priority}


def _device_name(top: dict[str, Any], sink: EventCollector) -> str:
    props = top.get("deviceProperties")
    if not isinstance(props, list):
        return ""
    used = {g[2][0] for g in sink.gpu}
    for p in props:
        if isinstance(p, dict) and hashable(p.get("id")) in used and isinstance(p.get("name"), str):
            return p["name"]
    return ""


def _event_deps(
    waits: list[tuple[int, Any]], corr_row: dict[Any, int]
) -> list[tuple[int, int, int]]:
    kind = DEP_KINDS.index("event")
    return [(corr_row[c], row, kind) for row, c in waits if c in corr_row and corr_row[c] != row]


def _flow_deps(
    flows: list[tuple], rows: list[tuple], threads: list[tuple]
) -> list[tuple[int, int, int]]:
    """Flows between two different rows (a host call and its own GPU work are one row)."""
    if not flows:
        return []
    slices = []
    for r, (dev_thread, host_thread) in enumerate(threads):
        if rows[r][5] != NO_TIME:
            slices.append((dev_thread, rows[r][5], rows[r][6], r))
        if host_thread is not None:
            slices.append((host_thread, rows[r][3], rows[r][4], r))
    kind = DEP_KINDS.index("flow")
    return [(src, dst, kind) for src, dst, _ in chrome_trace.bind_flows(slices, flows)]
