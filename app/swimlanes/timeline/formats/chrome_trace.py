"""Export Timelines as Chrome Trace Event JSON (opens in Perfetto and chrome://tracing).

Layout of the file:

* each Timeline is one process: pid 1 for the first simulated one, pid 2 for the first measured
  one (more get 3, 4, ...), named ``Simulated (h200)`` / ``Measured (H200)``;
* in each process a thread (row) for the host, then one per stream, then one per engine, named
  and ordered by ``thread_name`` / ``thread_sort_index`` metadata events;
* every op with any time has exactly one event of category ``op`` (``args.row`` says where):
  on its stream row when it has a device span and a stream, otherwise on the host row (its
  host call span). A device op also gets a copy on its engine row (category ``engine``), so
  the engine rows show what each engine was doing, and its host API call as an ``issue``
  event on the host row, so the host row reads as the host program. Counting the ``op``
  events therefore counts the ops;
* viewers need the slices of one thread to nest, so where slices of a row partly overlap
  (concurrent kernels on the compute engine) the row is split into numbered sub-rows
  (``compute engine``, ``compute engine (2)``, ...);
* ``ts``/``dur`` are float microseconds relative to the timeline's ``t0``, so a simulated and
  a measured timeline line up at zero;
* dependencies are flow events (``s`` at the source op, ``f`` with ``bp: "e"`` at the
  destination), ids unique within the file; an arrow never ends before it starts (see
  :func:`_flow_points`);
* with a simulated and a measured timeline, each ``op`` event of both carries the model's
  errors on that op (``start_error_us``, ``end_error_us``, ``duration_error_pct``: model minus
  measurement, from :meth:`Comparison.errors_of`, the figures ``swimlanes compare`` prints).

:func:`timeline_from_events` reads such a file back (used by trace import).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from swimlanes.model.atomic_write import write_text_atomic
from swimlanes.model.document import OP_KINDS
from swimlanes.timeline.compare import compare_timelines
from swimlanes.timeline.formats.chrome_devices import (  # device_pids: for trace import
    device_names,
    device_pids,  # noqa: F401
    with_devices,
)
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME, SOURCES, Timeline, TimelineBuilder

GENERATOR = "swimlanes"
#: Event categories this exporter writes (import recognises its own files by them).
OUR_CATS = ("op", "engine", "issue", "link")
HOST_ROW = "host thread"
HOST_TID = 1
_BASE_PID = {"simulated": 1, "measured": 2}


def _process_name(tl: Timeline) -> str:
    title = tl.source.capitalize()
    return f"{title} ({tl.device})" if tl.device else title


def _pids(timelines: list[Timeline]) -> list[list[int]]:
    """Per timeline, the pid of each of its devices (one for a single-device timeline). The
    first device keeps the timeline's own pid (1 simulated, 2 measured, then 3, 4, ...); the
    other devices of a multi-device timeline get pids from 10 on, so they never take the pid
    that marks a measured timeline."""
    taken: set[int] = set()
    out = []
    for tl in timelines:
        pid = _BASE_PID.get(tl.source, 3)
        while pid in taken:
            pid = max(pid, 2) + 1
        taken.add(pid)
        out.append([pid])
    extra = 10
    for tl, pids in zip(timelines, out, strict=True):
        for _device in tl.device_names[1:]:
            while extra in taken:
                extra += 1
            taken.add(extra)
            pids.append(extra)
    return out


def _meta(pid: int, tid: int, name: str, value: Any) -> dict[str, Any]:
    key = "sort_index" if name.endswith("sort_index") else "name"
    return {"ph": "M", "pid": pid, "tid": tid, "name": name, "args": {key: value}}


def _op_args(tl: Timeline, r: int, on_device: np.ndarray) -> dict[str, Any]:
    s, e = int(tl.stream[r]), int(tl.engine[r])
    args: dict[str, Any] = {
        "index": int(tl.index[r]),
        "op": OP_KINDS[int(tl.kind[r])],
        "stream": tl.stream_names[s] if s >= 0 else None,
        "engine": tl.engine_names[e] if e >= 0 else None,
    }
    if tl.device_names:
        args["device"] = tl.device_names[int(tl.host_device[r])]
    if tl.start_spread is not None and tl.end_spread is not None:
        # Measured runs: p90 - p10 over the repetitions.
        for key, col in (("start_spread_us", tl.start_spread), ("end_spread_us", tl.end_spread)):
            if col[r] != NO_TIME:
                args[key] = int(col[r]) / 1000.0
    nbytes = int(tl.bytes[r])
    if nbytes:
        args["bytes"] = nbytes
        if on_device[r] and tl.end[r] > tl.start[r]:
            args["GB/s"] = round(nbytes / int(tl.end[r] - tl.start[r]), 3)  # bytes/ns = GB/s
    return args


def _slices(tl: Timeline) -> list[tuple[tuple[str, int], int, int, str, int]]:
    """``(row, start, end, cat, op_row)`` of every X event, ``row`` being ("host", h) (the host
    thread h: see _host_rows), ("stream", s), ("engine", e) or
    ("link", l); the ``op`` slice of each op comes first, link slices come last."""
    on_device = tl.on_device
    has_issue = (tl.issue_start != NO_TIME) & (tl.issue_end != NO_TIME)
    hosts = _host_rows(tl)
    out = []
    for r in range(len(tl)):
        s, e = int(tl.stream[r]), int(tl.engine[r])
        host = ("host", hosts[r])
        if on_device[r]:
            span = (int(tl.start[r]), int(tl.end[r]))
            row = ("stream", s) if s >= 0 else ("engine", e) if e >= 0 else host
            out.append((row, *span, "op", r))
            if e >= 0 and row[0] != "engine":
                out.append((("engine", e), *span, "engine", r))
            if has_issue[r] and row[0] != "host":
                out.append((host, int(tl.issue_start[r]), int(tl.issue_end[r]), "issue", r))
        elif has_issue[r]:
            out.append((host, int(tl.issue_start[r]), int(tl.issue_end[r]), "op", r))
    for r, link in zip(tl.link_op.tolist(), tl.link_id.tolist(), strict=True):
        if on_device[r]:
            out.append((("link", link), int(tl.start[r]), int(tl.end[r]), "link", r))
    return out


def _host_rows(tl: Timeline) -> list[int]:
    """Per op, its host row: the host thread that issued it where the timeline names threads,
    else its device's (one) host thread."""
    if tl.thread_names:
        return [int(t) for t in tl.host_thread.tolist()]
    return [int(d) for d in tl.host_device.tolist()] if tl.device_names else [0] * len(tl)


def _host_row_names(tl: Timeline, device: int) -> list[tuple[tuple[str, int], str]]:
    """The host rows of ``device``: one per host thread where the timeline names threads."""
    if not tl.thread_names:
        return [(("host", device), HOST_ROW)]
    return [
        (("host", t), f"{HOST_ROW} {name}")
        for t, name in enumerate(tl.thread_names)
        if int(tl.thread_device[t]) == device
    ]


def _sub_lanes(slices: list[tuple]) -> list[int]:
    """A sub-lane per slice so that the slices of one thread nest (viewers need that, and
    concurrent kernels on the compute engine do not nest): first fit, where a slice fits a
    lane when it starts after the lane's open slices end or lies inside the innermost one."""
    lane = [0] * len(slices)
    by_row: dict[tuple, list[int]] = {}
    for i, sl in enumerate(slices):
        by_row.setdefault(sl[0], []).append(i)
    for items in by_row.values():
        items.sort(key=lambda i: (slices[i][1], -slices[i][2]))
        stacks: list[list[int]] = []  # per lane, the ends of its open slices
        for i in items:
            start, end = slices[i][1], slices[i][2]
            for k, stack in enumerate(stacks):
                while stack and stack[-1] <= start:
                    stack.pop()
                if not stack or end <= stack[-1]:
                    stack.append(end)
                    lane[i] = k
                    break
            else:
                stacks.append([end])
                lane[i] = len(stacks) - 1
    return lane


def _rows(tl: Timeline) -> list[tuple[int, tuple[str, int], str]]:
    """``(device, row, name)`` of every row in display order: per device its host threads, its
    streams, its engines and the links leaving it (all on device 0 for a single device)."""
    if not tl.device_names:
        rows = [(0, row, name) for row, name in _host_row_names(tl, 0)]
        rows += [(0, ("stream", s), n) for s, n in enumerate(tl.stream_names)]
        return rows + [(0, ("engine", e), f"{n} engine") for e, n in enumerate(tl.engine_names)]
    link_device = _link_devices(tl)
    out = []
    for d in range(len(tl.device_names)):
        out += [(d, row, name) for row, name in _host_row_names(tl, d)]
        out += [(d, ("stream", s), n) for s, n in enumerate(tl.stream_names)
                if int(tl.stream_device[s]) == d]  # fmt: skip
        out += [(d, ("engine", e), f"{n} engine") for e, n in enumerate(tl.engine_names)
                if int(tl.engine_device[e]) == d]  # fmt: skip
        out += [(d, ("link", k), n) for k, n in enumerate(tl.link_names) if link_device[k] == d]
    return out


def _link_devices(tl: Timeline) -> list[int]:
    """The device each link leaves from: the one whose name follows the link's kind
    ("NVLink gpu0→gpu1" leaves gpu0), else the first device."""
    out = []
    for name in tl.link_names:
        src = name.split(" ", 1)[-1].split("→", 1)[0]
        out.append(tl.device_names.index(src) if src in tl.device_names else 0)
    return out


def _row_events(
    tl: Timeline, pids: list[int], errors: list[dict[str, float]] | None = None
) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray, np.ndarray]:
    """Metadata + X events of one timeline (``errors``: extra args of each op's ``op`` event);
    returns also each op's pid and tid and the (ts, end) of its ``op`` slice, for flows."""
    t0 = tl.t0
    slices = _slices(tl)
    lanes = _sub_lanes(slices)
    rows = _rows(tl)
    used: dict[tuple, int] = {row: 1 for _d, row, _n in rows if row[0] == "host"}
    for sl, lane in zip(slices, lanes, strict=True):
        used[sl[0]] = max(used.get(sl[0], 0), lane + 1)
    out = []
    names = [_process_name(tl)]
    if tl.device_names:
        names = [f"{names[0]} {device}" for device in tl.device_names]
    for pid, name in zip(pids, names, strict=True):
        out += [_meta(pid, 0, "process_name", name), _meta(pid, 0, "process_sort_index", pid)]
    place: dict[tuple, tuple[int, int]] = {}
    next_tid = dict.fromkeys(pids, HOST_TID)
    for d, row, row_name in rows:
        pid = pids[d]
        for lane in range(max(used.get(row, 0), 1)):
            tid = next_tid[pid]
            next_tid[pid] += 1
            place[(row, lane)] = (pid, tid)
            name = row_name if lane == 0 else f"{row_name} ({lane + 1})"
            out += [_meta(pid, tid, "thread_name", name), _meta(pid, tid, "thread_sort_index", tid)]
    op_pid = np.full(len(tl), pids[0], dtype=np.int64)
    op_tid = np.full(len(tl), HOST_TID, dtype=np.int64)
    op_span = np.zeros((len(tl), 2), dtype=np.float64)
    on_device = tl.on_device
    args = [_op_args(tl, r, on_device) for r in range(len(tl))]
    for (row, start, end, cat, r), lane in zip(slices, lanes, strict=True):
        pid, tid = place[(row, lane)]
        ts, dur = (start - t0) / 1000.0, (end - start) / 1000.0
        a = args[r]
        if cat == "op":
            op_pid[r], op_tid[r], op_span[r] = pid, tid, (ts, ts + dur)
            a = {**a, "row": row[0], **(errors[r] if errors else {})}
        elif cat == "issue":
            a = {"index": a["index"], "op": a["op"], "stream": a["stream"]}
        elif cat == "link":
            a = {"index": a["index"], "op": a["op"], "link": tl.link_names[row[1]]}
        label = tl.labels[r] or args[r]["op"]
        out.append(
            {"ph": "X", "cat": cat, "name": label, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
             "args": a}
        )  # fmt: skip
    return out, op_pid, op_tid, op_span


def _flow_points(src: tuple[float, float], dst: tuple[float, float]) -> tuple[float, float]:
    """Where a dependency arrow leaves its source slice and enters its destination slice.

    Mid-slice where possible, where no neighbouring slice can catch the arrow. A host sync's
    slice starts long before the work it waits for and ends after it, so its middle can lie
    before the source's: then the arrow enters the sync between the source's middle and the
    sync's return, and never ends before it starts. Only where the destination ends before the
    source begins (a measurement's clocks can say so) does the arrow point back in time.
    """
    s, f = (src[0] + src[1]) / 2, (dst[0] + dst[1]) / 2
    if f >= s:
        return s, f
    if s < dst[1]:
        return s, (s + dst[1]) / 2
    lo, hi = max(src[0], dst[0]), min(src[1], dst[1])
    if lo <= hi:  # the two slices overlap only early in the source
        return (lo + hi) / 2, (lo + hi) / 2
    return s, f


def _flow_events(
    tl: Timeline, op_pid: np.ndarray, op_tid: np.ndarray, op_span: np.ndarray, first_id: int
) -> list[dict[str, Any]]:
    out = []
    for k in range(len(tl.dep_src)):
        src, dst = int(tl.dep_src[k]), int(tl.dep_dst[k])
        s_ts, f_ts = _flow_points(tuple(op_span[src]), tuple(op_span[dst]))
        name = DEP_KINDS[int(tl.dep_kind[k])]
        fid = first_id + k
        common = {"cat": "dependency", "name": name, "id": fid}
        # args.index names the op at each end exactly (a zero-length op sharing its time with
        # the next op on the row would make binding by time ambiguous).
        out.append(
            {**common, "pid": int(op_pid[src]), "ph": "s", "tid": int(op_tid[src]),
             "ts": float(s_ts), "args": {"index": int(tl.index[src])}}
        )  # fmt: skip
        out.append(
            {**common, "pid": int(op_pid[dst]), "ph": "f", "bp": "e", "tid": int(op_tid[dst]),
             "ts": float(f_ts), "args": {"index": int(tl.index[dst])}}
        )  # fmt: skip
    return out


# (arg, decimals): rounded as ``swimlanes compare --json`` rounds them
_ERROR_ARGS = (("start_error_us", 3), ("end_error_us", 3), ("duration_error_pct", 2))


def _error_args(timelines: list[Timeline]) -> list[list[dict[str, float]] | None]:
    """Per timeline and op, the model's error args, where the first simulated and the first
    measured timeline can be compared (None for the other timelines)."""
    out: list[list[dict[str, float]] | None] = [None] * len(timelines)
    sim = next((k for k, tl in enumerate(timelines) if tl.source == "simulated"), None)
    meas = next((k for k, tl in enumerate(timelines) if tl.source == "measured"), None)
    if sim is None or meas is None:
        return out
    cmp = compare_timelines(timelines[sim], timelines[meas])
    for k in (sim, meas):
        columns = cmp.errors_of(timelines[k].index)
        out[k] = [
            {
                key: round(float(col[r]), digits)
                for (key, digits), col in zip(_ERROR_ARGS, columns, strict=True)
                if not np.isnan(col[r])
            }
            for r in range(len(timelines[k]))
        ]
    return out


def timeline_to_chrome_trace(timelines: list[Timeline]) -> dict[str, Any]:
    """The Chrome Trace Event document of ``timelines`` (one process each)."""
    events: list[dict[str, Any]] = []
    next_flow = 1
    pids = _pids(timelines)
    errors = _error_args(timelines)
    for tl, tl_pids, errs in zip(timelines, pids, errors, strict=True):
        rows, op_pid, op_tid, op_span = _row_events(tl, tl_pids, errs)
        events.extend(rows)
        events.extend(_flow_events(tl, op_pid, op_tid, op_span, next_flow))
        next_flow += len(tl.dep_src)
    return {
        "otherData": {
            "generator": GENERATOR,
            "timelines": [
                _timeline_info(tl, tl_pids) for tl, tl_pids in zip(timelines, pids, strict=True)
            ],
        },
        "traceEvents": events,
    }


def _timeline_info(tl: Timeline, pids: list[int]) -> dict[str, Any]:
    info: dict[str, Any] = {
        "pid": pids[0],
        "name": tl.name,
        "source": tl.source,
        "device": tl.device,
    }
    if tl.device_names:
        # The process of each device, so that reading the file back joins them again.
        info["devices"] = [
            {"name": n, "pid": p} for n, p in zip(tl.device_names, pids, strict=True)
        ]
    return info


def write_chrome_trace(timelines: list[Timeline], path: str | Path) -> None:
    """Write :func:`timeline_to_chrome_trace` to ``path`` atomically."""
    text = json.dumps(timeline_to_chrome_trace(timelines), separators=(",", ":"))
    write_text_atomic(path, text + "\n")


# -- reading our own files back -----------------------------------------------------------------
def _pick_pid(ops: list[dict[str, Any]], top: dict[str, Any]) -> Any:
    """The measured process if the file has one, else the first."""
    pids = sorted({o["pid"] for o in ops}, key=str)
    return _BASE_PID["measured"] if _BASE_PID["measured"] in pids else pids[0]


def _source_of(pid: Any, top: dict[str, Any]) -> tuple[str, str, str]:
    """(source, device, name) of process ``pid`` from the file's ``otherData``."""
    other = top.get("otherData")
    info = other.get("timelines") if isinstance(other, dict) else None
    for item in info if isinstance(info, list) else []:
        if isinstance(item, dict) and item.get("pid") == pid and item.get("source") in SOURCES:
            return str(item["source"]), str(item.get("device", "")), str(item.get("name", ""))
    return "measured", "", ""


def timeline_from_events(
    events: list[dict[str, Any]], top: dict[str, Any], flows: Sequence[tuple[Any, ...]] = ()
) -> Timeline:
    """Rebuild a Timeline from the ``op``/``engine``/``issue`` events of a file this module
    wrote (times come back relative to 0; one process: the measured one if present).

    Each event is ``{"cat", "pid", "tid", "ts", "dur", "name", "args"}``, ``ts``/``dur`` in ns;
    ``flows`` are ``(ph, id, pid, tid, ts_ns, name, args_index)`` and come back as dependencies.
    Raises ValueError if they do not describe ops.
    """
    pid = _pick_pid(events, top)
    mine = [e for e in events if e["pid"] == pid]
    issues = {e["args"].get("index"): e for e in mine if e["cat"] == "issue"}
    ops = sorted((e for e in mine if e["cat"] == "op"), key=lambda e: e["args"].get("index", 0))
    source, device, name = _source_of(pid, top)
    b = TimelineBuilder([], [])
    row_of_index: dict[int, int] = {}
    for e in ops:
        a = e["args"]
        if a["op"] not in OP_KINDS or not isinstance(a.get("index"), int):
            raise ValueError(f"op event {e['name']!r}: unknown op {a['op']!r} or bad index")
        device_span = a.get("row") != "host"
        span = (e["ts"], e["ts"] + e["dur"])
        issue = issues.get(a["index"])
        issue_span = (issue["ts"], issue["ts"] + issue["dur"]) if issue else (NO_TIME, NO_TIME)
        row_of_index[a["index"]] = len(b.labels)
        b.add(
            index=a["index"],
            kind=a["op"],
            stream=a.get("stream") if isinstance(a.get("stream"), str) else None,
            engine=a.get("engine") if isinstance(a.get("engine"), str) else None,
            issue_start=issue_span[0] if device_span else span[0],
            issue_end=issue_span[1] if device_span else span[1],
            start=span[0] if device_span else NO_TIME,
            end=span[1] if device_span else NO_TIME,
            nbytes=int(a.get("bytes") or 0),
            label=str(e["name"]),
        )
    _add_flow_deps(b, row_of_index, [f for f in flows if f[2] == pid])
    tl = b.build(source=source, device=device, name=name, meta={"trace_format": GENERATOR})
    names = device_names(pid, top)
    if names:
        links = [e for e in mine if e["cat"] == "link"]
        tl = with_devices(tl, names, ops, links)
    return tl


def bind_flows(
    slices: list[tuple[Any, int, int, int]], flows: list[tuple]
) -> list[tuple[int, int, Any]]:
    """Pair flow events into ``(src_row, dst_row, name)`` links between different rows.

    ``slices`` are ``(thread, start, end, row)``, ``flows`` are ``(ph, id, pid, tid, ts, name)``
    with ``thread == (pid, tid)``; each flow end binds to the slice enclosing its time on its
    thread (the latest-starting one), as trace viewers do.
    """
    by_thread: dict[Any, list[tuple[int, int, int]]] = {}
    for thread, start, end, row in slices:
        by_thread.setdefault(thread, []).append((start, end, row))
    flow_at: dict[Any, list[int]] = {}
    for i, f in enumerate(flows):
        flow_at.setdefault((f[2], f[3]), []).append(i)
    bound = np.full(len(flows), -1, dtype=np.int64)
    for thread, which in flow_at.items():
        if thread not in by_thread:
            continue
        arr = np.asarray(sorted(by_thread[thread]), dtype=np.int64).reshape(-1, 3)
        ts = np.asarray([flows[i][4] for i in which], dtype=np.int64)
        k = np.searchsorted(arr[:, 0], ts, side="right") - 1
        hit = (k >= 0) & (arr[np.maximum(k, 0), 1] >= ts)
        bound[np.asarray(which)[hit]] = arr[k[hit], 2]
    ends: dict[Any, dict[str, tuple[int, Any]]] = {}
    for i, (ph, fid, _pid, _tid, _ts, name, *_) in enumerate(flows):
        if bound[i] >= 0 and fid is not None:
            ends.setdefault(fid, {})[ph] = (int(bound[i]), name)
    return [
        (e["s"][0], e["f"][0], e["s"][1])
        for e in ends.values()
        if "s" in e and "f" in e and e["s"][0] != e["f"][0]
    ]


def _add_flow_deps(b: Any, row_of_index: dict[int, int], flows: list[tuple]) -> None:
    """Our flows name their ops in ``args.index`` (the flow tuple's last item)."""
    ends: dict[Any, dict[str, tuple[int, Any]]] = {}
    for ph, fid, _pid, _tid, _ts, name, index in flows:
        if index in row_of_index:
            ends.setdefault(fid, {})[ph] = (row_of_index[index], name)
    for end in ends.values():
        if "s" in end and "f" in end and end["s"][0] != end["f"][0]:
            name = end["s"][1]
            b.add_dep(end["s"][0], end["f"][0], name if name in DEP_KINDS else "flow")
