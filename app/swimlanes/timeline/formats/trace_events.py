"""Reading trace events as they are parsed: what each contributes to an imported timeline,
kept as compact tuples (GPU records, runtime calls, flows, Swimlanes' own op events), with the
number kept bounded. :mod:`swimlanes.timeline.formats.trace_import` builds the timeline from
them."""

from __future__ import annotations

import functools
import re
from typing import Any

from swimlanes.timeline.formats import chrome_trace
from swimlanes.timeline.formats.trace_source import DEFAULT_MAX_KEPT, TraceError
from swimlanes.timeline.timeline import TIME_LIMIT_NS

_GPU_CATS = {"kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "cuda_sync"}
_RUNTIME_CATS = {"cuda_runtime", "runtime", "cuda_driver", "driver"}
_COPY_DIRECTIONS = {"htod": "h2d", "dtoh": "d2h", "dtod": "d2d", "ptop": "d2d"}
_SYNC_KINDS = {
    "stream sync": "stream_sync",
    "event sync": "event_sync",
    "context sync": "device_sync",
    "stream wait event": "event_wait",
}
_NO_STREAM = {-1, 4294967295}
_MEMCPY_RE = re.compile(r"memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?", re.IGNORECASE)


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


def hashable(v: Any) -> Any:
    """Ids as dict keys: JSON lists and objects (never valid ids) become their text."""
    return v if v is None or type(v) in (int, str, float, bool) else repr(v)


# Times in microseconds whose nanoseconds fit the timeline's range (int64, with room to add).
_MAX_US = TIME_LIMIT_NS / 1000
_MAX_BYTES_PER_OP = 2**62
# Distinct reasons counted in meta["skipped_events"] (skipped GPU records are counted by name).
_MAX_SKIP_REASONS = 1000


def _ns(us: float) -> int:
    return int(round(us * 1000))


class EventCollector:
    """Keeps what each kind of event contributes, as compact tuples, while the file is parsed."""

    def __init__(self, max_kept: int = DEFAULT_MAX_KEPT) -> None:
        self.max_kept = max_kept
        self.kept = 0
        # Names, streams and threads repeat: one object per distinct one (memory per event).
        self._shared: dict[Any, Any] = {}
        # (event number, kind, (device, stream), ts, dur, name, correlation, bytes, extra, thread)
        self.gpu: list[tuple[int, str, tuple, int, int, str, Any, int, dict, tuple]] = []
        self.runtime: dict[Any, tuple[int, int, str, Any, Any]] = {}
        self.runtime_order: list[Any] = []
        self.runtime_stream: dict[Any, int] = {}  # calls whose trace names their stream
        # (ph, id, pid, tid, ts, name, args.index)
        self.flows: list[tuple] = []
        self.ours: list[dict[str, Any]] = []
        # PyTorch's record_function ranges ("user_annotation"): (name, start, end) in ns.
        self.annotations: list[tuple[str, int, int]] = []
        self.skipped: dict[str, int] = {}
        self.count = 0
        # Open duration events ("B", not yet ended), per (pid, tid): (event number, event).
        self.open: dict[tuple, list[tuple[int, dict[str, Any]]]] = {}

    def _skip(self, what: str) -> None:
        if what not in self.skipped and len(self.skipped) >= _MAX_SKIP_REASONS:
            what = "other"
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def _share(self, key: tuple) -> tuple:
        return self._shared.setdefault(key, key)

    def _keep(self, n: int) -> None:
        """Count one more event kept; refuse the trace past ``max_kept``."""
        self.kept += 1
        if self.kept > self.max_kept:
            raise TraceError(
                f"traceEvents[{n}]: more than {self.max_kept:,} GPU records, runtime calls and "
                "flows to keep (the limit on what import holds in memory)"
            )

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
            ids = (hashable(ev.get(k)) for k in ("id", "pid", "tid"))
            flow = (ph, *ids, ts, hashable(ev.get("name")))
            self._keep(n)
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
        thread = (hashable(ev.get("pid")), hashable(ev.get("tid")))
        if ph == "B":
            self._keep(n)
            self.open.setdefault(thread, []).append((n, ev))
            return
        opened = self.open.get(thread)
        if not opened:
            self._skip("ph E without B")
            return
        first, begin = opened.pop()
        self.kept -= 1
        start = _number(begin, "ts", first)
        if ts < start:
            raise TraceError(f"traceEvents[{n}]: 'E' ends before its 'B' (traceEvents[{first}])")
        args = begin.get("args")
        args = dict(args) if type(args) is dict else {}
        if type(ev.get("args")) is dict:
            args.update(ev["args"])
        whole = {**ev, **begin, "ph": "X", "dur": ts - start, "args": args}
        self._complete(first, whole)

    def release_records(self) -> None:
        """Forget the GPU records and runtime calls (once they have become rows)."""
        self.gpu = []
        self.runtime = {}
        self.runtime_order = []

    def close(self) -> None:
        """Count the duration events that never ended."""
        for opened in self.open.values():
            for _ in opened:
                self._skip("ph B without E")
        self.open.clear()

    def _complete(self, n: int, ev: dict[str, Any]) -> None:
        ts_us, dur_us = ev.get("ts"), ev.get("dur")
        if not (
            (type(ts_us) is float or type(ts_us) is int)
            and (type(dur_us) is float or type(dur_us) is int)
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
            corr = hashable(args.get("correlation", args.get("External id")))
            thread = self._share((hashable(ev.get("pid")), hashable(ev.get("tid"))))
            skey = self._share((hashable(device), stream))
            self._keep(n)
            name = self._shared.setdefault(name, name)
            self.gpu.append((n, kind, skey, ts, dur, name, corr, nbytes, extra, thread))
        elif cat in _RUNTIME_CATS:
            corr = hashable(args.get("correlation"))
            key = corr if corr is not None else ("row", n)
            self._keep(n)
            name = self._shared.setdefault(name, name)
            self.runtime[key] = (ts, dur, name, hashable(ev.get("pid")), hashable(ev.get("tid")))
            self.runtime_order.append(key)
            stream = args.get("stream")
            if type(stream) is int and stream not in _NO_STREAM:  # an event record's stream
                self.runtime_stream[key] = stream
        elif cat == "user_annotation":
            self._keep(n)
            self.annotations.append((self._shared.setdefault(name, name), ts, ts + dur))
        elif cat in chrome_trace.OUR_CATS and isinstance(args.get("op"), str):
            self._keep(n)
            self.ours.append(
                {"cat": cat, "pid": hashable(ev.get("pid")), "tid": hashable(ev.get("tid")),
                 "ts": ts, "dur": dur, "name": name, "args": args}
            )  # fmt: skip
        else:
            self._skip(cat or "uncategorised")


def _flow_index(ev: dict[str, Any]) -> int | None:
    args = ev.get("args")
    index = args.get("index") if isinstance(args, dict) else None
    return index if type(index) is int else None


_NO_EXTRA: dict[str, Any] = {}  # shared by every kernel and memset: never modified
_MAX_DIM = 2**31 - 1


def _dims(value: Any) -> int:
    """Blocks of a ``grid`` or threads of a ``block`` ([x, y, z] in Kineto), 0 if not one."""
    if not isinstance(value, list) or not 1 <= len(value) <= 3:
        return 0
    total = 1
    for v in value:
        if type(v) is not int or not 1 <= v <= _MAX_DIM:
            return 0
        total *= v
    return total if total <= _MAX_DIM else 0


@functools.lru_cache(maxsize=4096)
def _kernel_shape(blocks: int, threads: int) -> dict[str, Any]:
    """One shared (never modified) extra per distinct launch shape."""
    return {"blocks": blocks, "threads": threads}


def _gpu_kind(cat: str, name: str, args: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    if cat == "kernel":
        blocks, threads = _dims(args.get("grid")), _dims(args.get("block"))
        return "kernel", _kernel_shape(blocks, threads) if blocks and threads else _NO_EXTRA
    if cat in ("gpu_memset", "memset"):
        return "memset", _NO_EXTRA
    if cat == "cuda_sync":
        kind = _SYNC_KINDS.get(str(args.get("cuda_sync_kind", name)).lower())
        return kind, {
            "record_corr": hashable(args.get("wait_on_cuda_event_record_corr_id")),
            "record_stream": hashable(args.get("wait_on_stream")),
        }
    m = _MEMCPY_RE.match(name)
    if not m:
        return None, _NO_EXTRA
    kind = _COPY_DIRECTIONS.get(m.group(1).lower())
    ends = {(m.group(2) or "").lower(), (m.group(3) or "").lower()}
    memory = "pageable" if "pageable" in ends else ("pinned" if "pinned" in ends else "")
    return kind, {"host_memory": memory}
