"""Open Chrome Trace Event JSON and PyTorch profiler (Kineto) traces as a measured Timeline.

Safety: the file is only ever parsed as JSON (nothing in it is evaluated); a gzip is
decompressed in chunks and refused as soon as it would pass ``max_bytes``; every malformed
event is reported by its position (``traceEvents[12]: 'ts' must be a number``).

What becomes a row: GPU activity (``kernel``, ``gpu_memcpy``, ``gpu_memset``, ``cuda_sync``)
on a per-stream row named ``stream N``; its CUDA runtime/driver call (linked by correlation id)
gives the row's host issue span. Runtime calls with no GPU record that still matter to a
schedule (cudaMalloc, cudaFree, syncs, cudaEventRecord, cudaStreamWaitEvent,
cudaLaunchHostFunc, and their driver API twins) become host-only rows. Rows are in host issue
order, which is the program order of a single-threaded host. Copies are typed from the
event name ("Memcpy HtoD (Pageable -> Device)"); pageable ones are listed in
``meta["pageable_rows"]``. Flow events between two different rows become ``flow`` deps
(Kineto's ``ac2g`` flows only repeat the correlation ids, so they add none); a Kineto event
wait that names its record becomes an ``event`` dep. Also opens our own exported Chrome
traces (the measured process, else the first), ``swimlanes-timeline`` files and saved runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from swimlanes.model.document import OP_KINDS
from swimlanes.timeline import chrome_trace
from swimlanes.timeline.io import (
    DEFAULT_MAX_BYTES,
    RUN_FORMAT,
    Cancel,
    Progress,
    TraceError,
    read_trace_text,
    run_from_dict,
    trace_name,
)
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME, TIMELINE_FORMAT, Timeline
from swimlanes.timeline.trace_json import parse_events

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

_GPU_CATS = {"kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "cuda_sync"}
_RUNTIME_CATS = {"cuda_runtime", "runtime", "cuda_driver", "driver"}
_COPY_DIRECTIONS = {"htod": "h2d", "dtoh": "d2h", "dtod": "d2d", "ptop": "d2d"}
_SYNC_KINDS = {
    "stream sync": "stream_sync",
    "event sync": "event_sync",
    "context sync": "device_sync",
    "stream wait event": "event_wait",
}
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
_NO_STREAM = {-1, 4294967295}
_MEMCPY_RE = re.compile(r"memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?", re.IGNORECASE)
_MAX_STREAMS = np.iinfo(np.int16).max


# -- events -------------------------------------------------------------------------------------
def _number(ev: dict[str, Any], key: str, n: int) -> float:
    v = ev.get(key)
    if type(v) is int or type(v) is float:
        if -_MAX_US < v < _MAX_US:  # also false for NaN
            return v
        raise TraceError(f"traceEvents[{n}]: {key!r} is not a finite time in range")
    if v is None:
        raise TraceError(f"traceEvents[{n}]: {key!r} is missing")
    raise TraceError(f"traceEvents[{n}]: {key!r} must be a number")


def _hashable(v: Any) -> Any:
    """Ids as dict keys: JSON lists and objects (never valid ids) become their text."""
    return v if v is None or type(v) in (int, str, float, bool) else repr(v)


_NUMBER = (int, float)
# Times beyond about 73 years in microseconds would overflow int64 nanoseconds.
_MAX_US = 2**61 / 1000
_MAX_BYTES_PER_OP = 2**62


def _ns(us: float) -> int:
    return int(round(us * 1000))


class _Collector:
    """Keeps what each kind of event contributes, as compact tuples, while the file is parsed."""

    def __init__(self) -> None:
        # (event number, kind, (device, stream), ts, dur, name, correlation, bytes, extra, thread)
        self.gpu: list[tuple[int, str, tuple, int, int, str, Any, int, dict, tuple]] = []
        self.runtime: dict[Any, tuple[int, int, str, Any, Any]] = {}
        self.runtime_order: list[Any] = []
        # (ph, id, pid, tid, ts, name, args.index)
        self.flows: list[tuple] = []
        self.ours: list[dict[str, Any]] = []
        self.skipped: dict[str, int] = {}
        self.count = 0
        # Open duration events ("B", not yet ended), per (pid, tid): (event number, event).
        self.open: dict[tuple, list[tuple[int, dict[str, Any]]]] = {}

    def _skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def add(self, n: int, ev: Any) -> None:
        self.count += 1
        if not isinstance(ev, dict):
            raise TraceError(f"traceEvents[{n}]: must be an object")
        ph = ev.get("ph")
        if ph == "X":
            self._complete(n, ev)
        elif ph in ("s", "t", "f") and ev.get("cat") == "ac2g":
            # Kineto's CPU-to-GPU flows repeat the correlation ids that already link a runtime
            # call to its GPU work (one row), so they carry no dependency.
            _number(ev, "ts", n)
            self._skip("ac2g flow")
        elif ph in ("s", "t", "f"):
            ts = _ns(_number(ev, "ts", n))
            ids = (_hashable(ev.get(k)) for k in ("id", "pid", "tid"))
            flow = (ph, *ids, ts, _hashable(ev.get("name")))
            self.flows.append((*flow, _flow_index(ev)))
        elif ph == "B" or ph == "E":
            self._duration(n, ev, ph)
        elif ph in ("i", "I", "b", "e", "n", "C"):
            _number(ev, "ts", n)
            self._skip(f"ph {ph}")
        elif not isinstance(ph, str):
            raise TraceError(f"traceEvents[{n}]: 'ph' must be a string")

    def _duration(self, n: int, ev: dict[str, Any], ph: str) -> None:
        """A "B"/"E" pair on one thread is one complete event: B's name, category and start,
        the arguments of both, and E's end (pairs nest, as the format requires)."""
        ts = _number(ev, "ts", n)
        thread = (_hashable(ev.get("pid")), _hashable(ev.get("tid")))
        if ph == "B":
            self.open.setdefault(thread, []).append((n, ev))
            return
        opened = self.open.get(thread)
        if not opened:
            self._skip("ph E without B")
            return
        first, begin = opened.pop()
        start = _number(begin, "ts", first)
        if ts < start:
            raise TraceError(f"traceEvents[{n}]: 'E' ends before its 'B' (traceEvents[{first}])")
        args = begin.get("args")
        args = dict(args) if type(args) is dict else {}
        if type(ev.get("args")) is dict:
            args.update(ev["args"])
        whole = {**ev, **begin, "ph": "X", "dur": ts - start, "args": args}
        self._complete(first, whole)

    def close(self) -> None:
        """Count the duration events that never ended."""
        for opened in self.open.values():
            for _ in opened:
                self._skip("ph B without E")
        self.open.clear()

    def _complete(self, n: int, ev: dict[str, Any]) -> None:
        ts_us, dur_us = ev.get("ts"), ev.get("dur")
        if not (
            type(ts_us) in _NUMBER
            and type(dur_us) in _NUMBER
            and -_MAX_US < ts_us < _MAX_US
            and 0 <= dur_us < _MAX_US
        ):
            ts_us, dur_us = _number(ev, "ts", n), _number(ev, "dur", n)
            if dur_us < 0:
                raise TraceError(f"traceEvents[{n}]: 'dur' must not be negative")
        ts, dur = round(ts_us * 1000), round(dur_us * 1000)
        cat = ev.get("cat")
        cat = cat.lower() if type(cat) is str else ""
        args = ev.get("args")
        if type(args) is not dict:
            args = {}
        name = ev.get("name", "")
        if type(name) is not str:
            name = str(name)
        if cat in _GPU_CATS:
            kind, extra = _gpu_kind(cat, name, args)
            if kind is None:
                self._skip(name)
                return
            stream = args.get("stream", ev.get("tid"))
            stream = stream if type(stream) is int and stream not in _NO_STREAM else -1
            device = args.get("device", ev.get("pid"))
            nbytes = args.get("bytes", 0)
            nbytes = nbytes if type(nbytes) is int and 0 < nbytes < _MAX_BYTES_PER_OP else 0
            corr = _hashable(args.get("correlation", args.get("External id")))
            thread = (_hashable(ev.get("pid")), _hashable(ev.get("tid")))
            device = _hashable(device)
            self.gpu.append((n, kind, (device, stream), ts, dur, name, corr, nbytes, extra, thread))
        elif cat in _RUNTIME_CATS:
            corr = _hashable(args.get("correlation"))
            key = corr if corr is not None else ("row", n)
            self.runtime[key] = (ts, dur, name, _hashable(ev.get("pid")), _hashable(ev.get("tid")))
            self.runtime_order.append(key)
        elif cat in chrome_trace.OUR_CATS and isinstance(args.get("op"), str):
            self.ours.append(
                {"cat": cat, "pid": _hashable(ev.get("pid")), "tid": _hashable(ev.get("tid")),
                 "ts": ts, "dur": dur, "name": name, "args": args}
            )  # fmt: skip
        else:
            self._skip(cat or "uncategorised")


def _flow_index(ev: dict[str, Any]) -> int | None:
    args = ev.get("args")
    index = args.get("index") if isinstance(args, dict) else None
    return index if type(index) is int else None


def _gpu_kind(cat: str, name: str, args: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    if cat == "kernel":
        return "kernel", {}
    if cat in ("gpu_memset", "memset"):
        return "memset", {}
    if cat == "cuda_sync":
        kind = _SYNC_KINDS.get(str(args.get("cuda_sync_kind", name)).lower())
        return kind, {"record_corr": _hashable(args.get("wait_on_cuda_event_record_corr_id"))}
    m = _MEMCPY_RE.match(name)
    if not m:
        return None, {}
    kind = _COPY_DIRECTIONS.get(m.group(1).lower())
    ends = {(m.group(2) or "").lower(), (m.group(3) or "").lower()}
    memory = "pageable" if "pageable" in ends else ("pinned" if "pinned" in ends else "")
    return kind, {"host_memory": memory}


# -- building the Timeline ----------------------------------------------------------------------
def load_trace(
    path: str | Path,
    *,
    progress: Progress = None,
    cancel: Cancel = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Timeline:
    """Open a Chrome Trace Event / Kineto trace (gzipped or not), our own exported Chrome trace,
    a ``swimlanes-timeline`` file or a saved run (its timeline), as a Timeline.

    ``progress`` gets fractions in [0, 1]; ``cancel`` returning True stops the load with
    :class:`TraceCancelled`. Raises :class:`TraceError` for anything malformed.
    """
    text = read_trace_text(path, max_bytes=max_bytes, progress=progress, cancel=cancel)
    tl = parse_trace_text(text, progress=progress, cancel=cancel)
    if not tl.name:
        tl.name = trace_name(path)
    if progress:
        progress(1.0)
    return tl


def parse_trace_text(text: str, *, progress: Progress = None, cancel: Cancel = None) -> Timeline:
    """:func:`load_trace` on text already read."""
    sink = _Collector()
    top = parse_events(text, sink.add, progress, cancel)
    sink.close()
    fmt = top.get("format")
    if fmt in (TIMELINE_FORMAT, RUN_FORMAT):
        return run_from_dict(top)[0]
    if fmt == "swimlanes-pipeline":
        raise TraceError("a swimlanes-pipeline file is not a trace (simulate or run it first)")
    if isinstance(fmt, str) and fmt.startswith("swimlanes-"):
        raise TraceError(f"a {fmt} file is not a trace")
    if "traceEvents" not in top and text.lstrip()[:1] == "{":
        raise TraceError("not a trace: no 'traceEvents' list")
    if top.get("traceEvents", True) is not True:
        raise TraceError("'traceEvents' must be a list")
    if sink.gpu:
        return _kineto_timeline(sink, top)
    if sink.ours:
        try:
            return chrome_trace.timeline_from_events(sink.ours, top, sink.flows)
        except (ValueError, TypeError, KeyError, OverflowError) as err:
            raise TraceError(f"malformed Swimlanes trace: {err}") from None
    raise TraceError(
        f"no GPU activity in the trace ({sink.count} events, none of category kernel, "
        "gpu_memcpy, gpu_memset or cuda_sync)"
    )


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

    def add_gpu(self, sink: _Collector, stream_id: dict, engine_id: dict) -> None:
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
            if call:
                used.add(corr)
            if corr is not None:
                self.corr_row[corr] = row
            if extra.get("host_memory") == "pageable":
                self.pageable.append(row)
            if extra.get("record_corr") is not None:
                self.waits.append((row, extra["record_corr"]))
        for key in sink.runtime_order:
            ts, dur, name, pid, tid = sink.runtime[key]
            kind = _HOST_CALLS.get(_CALL_SUFFIX.sub("", name))
            if key in used or kind is None:
                continue
            self.corr_row[key] = len(self.rows)
            self.rows.append((kind, -1, -1, ts, ts + dur, NO_TIME, NO_TIME, 0, name))
            self.threads.append(((None, None), (pid, tid)))


def _kineto_timeline(sink: _Collector, top: dict[str, Any]) -> Timeline:
    stream_keys = sorted({g[2] for g in sink.gpu if g[2][1] >= 0}, key=lambda k: (str(k[0]), k[1]))
    if len(stream_keys) > _MAX_STREAMS:
        raise TraceError(f"{len(stream_keys)} streams: more than the {_MAX_STREAMS} supported")
    stream_name = _stream_names(stream_keys)
    present = {ENGINE_OF_KIND.get(g[1]) for g in sink.gpu}
    engines = [e for e in _ENGINE_ORDER if e in present]
    t = _Rows()
    t.add_gpu(
        sink, {k: i for i, k in enumerate(stream_keys)}, {e: i for i, e in enumerate(engines)}
    )

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
        device=_device_name(top, sink),
        meta={
            "trace_format": "kineto" if "deviceProperties" in top else "chrome",
            "events": sink.count,
            "skipped_events": sink.skipped,
            "pageable_rows": sorted(int(new_row[r]) for r in t.pageable),
        },
    )


def _device_name(top: dict[str, Any], sink: _Collector) -> str:
    props = top.get("deviceProperties")
    if not isinstance(props, list):
        return ""
    used = {g[2][0] for g in sink.gpu}
    for p in props:
        if isinstance(p, dict) and p.get("id") in used and isinstance(p.get("name"), str):
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
