"""What a Gantt chart shows, as numpy arrays: rows, bars, SM occupancy (no Qt in here).

The chart widget and the image exporter both draw from a :class:`ChartRows`, so the two agree.
Times are float microseconds relative to the timeline's ``t0``: absolute nanosecond clocks
(1e18) lose precision in the float coordinates of a graphics scene.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from swimlanes.model.document import OP_KINDS
from swimlanes.model.op_kinds import REGISTRY
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME, Timeline
from swimlanes.ui.gantt.coverage import (  # noqa: F401 - re-exported: drawing code and tests
    SHADE_LEVELS,
    BarLod,
    coverage_grid,
    cull_bars,
    cull_bars_shaded,
    label_spans,
    shade_runs,
)
from swimlanes.ui.gantt.device_rows import (
    DeviceLayout,
    collective_connectors,
    device_layout,
    device_row_keys,
    op_host_rows,
)
from swimlanes.ui.gantt.row_keys import (  # noqa: F401 - re-exported: the chart's row keys
    COMPUTE_ROW,
    HOST_ROW,
    compute_row,
    engine_row,
    host_row,
    is_compute_row,
    is_host_row,
    is_link_row,
    link_row,
    row_device,
    row_thread,
    stream_row,
)
from swimlanes.units import format_bytes

#: Categories in legend order; an op kind maps to one through swimlanes.ui.style.OP_CATEGORY.
_KERNEL = OP_KINDS.index("kernel")
#: Per op kind code: whether its span is the host's wait or work (syncs, ``free``, ``host``),
#: drawn on the host row only. A captured trace gives a stream sync the span of its wait on
#: its stream (as Kineto does); on the stream's row it would cover the work it waited for.
_HOST_SPAN = np.array([k.host_blocking in ("always", "busy") for k in REGISTRY], dtype=bool)


#: How a stream's kind reads in its row title (plain blocking streams need no note).
_STREAM_KIND_TEXT = {
    "legacy_default": "legacy",
    "per_thread_default": "per-thread",
    "non_blocking": "non-blocking",
}


def stream_info_of(pipeline: Any) -> dict[str, dict[str, Any]]:
    """Stream name -> {"kind", "priority"} from a pipeline, for the row titles."""
    return {s.name: {"kind": s.kind, "priority": s.priority} for s in pipeline.all_streams}


def row_title(key: str, stream_info: dict[str, dict] | None = None) -> str:
    """The text heading a row: "Host", the stream's name (kind, priority), the engine's name."""
    if key == HOST_ROW:
        return "Host"
    if key == COMPUTE_ROW:
        return "Compute (SMs)"
    if is_host_row(key):
        thread = row_thread(key)
        return f"{thread if thread is not None else row_device(key)} host thread"
    if is_compute_row(key):
        return f"{row_device(key)} SMs"
    kind, _, name = key.partition(":")
    if kind == "stream":
        info = (stream_info or {}).get(name) or {}
        extras = []
        kind_text = _STREAM_KIND_TEXT.get(str(info.get("kind", "")), "")
        if kind_text:
            extras.append(kind_text)
        if info.get("priority") not in (None, 0):
            extras.append(f"prio {info['priority']}")
        return f"{name} ({', '.join(extras)})" if extras else name
    return name


@dataclass
class OccupancyTrack:
    """SM occupancy shown on one row: ``frac[i]`` holds from ``x[i]`` to ``x[i + 1]``."""

    row: int
    x: np.ndarray
    frac: np.ndarray
    capacity: int
    #: Whether it counts SMs (False: concurrent kernels, when the timeline has no samples).
    sms: bool = True
    #: Its peak table for zoomed-out views (occupancy.StepPeaks), made on first use.
    peaks: Any = field(default=None, compare=False, repr=False)


@dataclass
class ChartRows:
    """Rows and bars of one timeline, ready to draw.

    ``bar_*`` arrays hold one bar per (op, row) pair: an op has a bar on the host row (its API
    call), on its stream row and on its engine row (kernels go to the SM occupancy row instead).
    ``bar_op`` is the timeline row of the op (``Timeline.index[bar_op]`` is its program index).
    """

    timeline: Timeline | None
    keys: list[str]
    titles: list[str]
    t0: int = 0
    bar_x0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    bar_x1: np.ndarray = field(default_factory=lambda: np.zeros(0))
    bar_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    bar_op: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    bar_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    compute_row: int | None = None
    #: Step function of SM occupancy: value occ_frac[i] holds from occ_x[i] to occ_x[i + 1].
    occ_x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    occ_frac: np.ndarray = field(default_factory=lambda: np.zeros(0))
    occ_capacity: int = 0
    #: Every SM-occupancy row (one per device of a multi-device timeline); the first one is
    #: also ``compute_row`` / ``occ_*``.
    occupancy: list[OccupancyTrack] = field(default_factory=list)
    #: One (x0 µs, x1 µs, top row, bottom row) per collective instance shown on two rows or
    #: more (multi-device timelines).
    collectives: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    #: The devices of a multi-device timeline (empty for a single device).
    devices: list[str] = field(default_factory=list)

    @property
    def span_us(self) -> float:
        """The time from t0 to the last bar's end (0 when empty)."""
        ends = [a.max() for a in (self.bar_x1, *(t.x for t in self.occupancy)) if len(a)]
        return float(max(ends)) if ends else 0.0

    def row_of(self, key: str) -> int | None:
        try:
            return self.keys.index(key)
        except ValueError:
            return None

    def occupancy_at_row(self, row: int) -> OccupancyTrack | None:
        """The SM occupancy drawn on ``row``, if any."""
        return next((t for t in self.occupancy if t.row == row), None)


def _us(values: np.ndarray, t0: int) -> np.ndarray:
    """µs from ``t0``; subtract in int64 first (a float64 of epoch ns is only 256 ns exact)."""
    out = (values - t0).astype(np.float64)
    out /= 1000.0
    return out


def timeline_row_keys(tl: Timeline) -> tuple[list[str], int | None]:
    """The rows a timeline needs in their natural order, and the index of its compute engine.

    The compute engine is the engine that kernels run on; it is drawn as SM occupancy. A
    multi-device timeline has rows per device (see ``device_rows``) and no single compute
    engine (None).
    """
    devices = device_layout(tl)
    if devices is not None:
        return device_row_keys(tl, devices), None
    compute_engine = None
    kernels = (tl.kind == _KERNEL) & (tl.engine >= 0)
    if kernels.any():
        compute_engine = int(np.bincount(tl.engine[kernels]).argmax())
    used_engines = set(np.unique(tl.engine[tl.engine >= 0]).tolist())
    keys = [HOST_ROW]
    keys += [stream_row(n) for n in tl.stream_names]  # declared streams, even idle ones
    keys += [
        engine_row(n)
        for i, n in enumerate(tl.engine_names)
        if i in used_engines and i != compute_engine
    ]
    if compute_engine is not None or len(tl.occupancy_time):
        keys.append(COMPUTE_ROW)
    return keys, compute_engine


def build_rows(
    tl: Timeline | None,
    layout: list[str] | None = None,
    stream_info: dict[str, dict[str, Any]] | None = None,
    merge: dict[str, str] | None = None,
) -> ChartRows:
    """Lay a timeline out on rows; ``layout`` forces row order (extra rows go at the end).

    ``stream_info`` (name -> kind, priority) labels the stream rows; without it the
    timeline's ``meta["streams"]`` is used when present. ``merge`` draws the bars of a row
    key on another row of ``layout`` (a collapsed group's summary row); a merged compute row
    shows its kernels as bars there instead of SM occupancy.
    """
    merge = merge or {}
    if tl is None:
        keys = list(layout or [])
        return ChartRows(None, keys, [row_title(k, stream_info) for k in keys])
    devices = device_layout(tl)
    natural, compute_engine = timeline_row_keys(tl)
    keys = list(layout) if layout else []
    keys += [k for k in natural if k not in keys and k not in merge]
    info = stream_info
    if info is None and isinstance(tl.meta.get("streams"), dict):
        info = tl.meta["streams"]
    out = ChartRows(tl, keys, [row_title(k, info) for k in keys], t0=tl.t0)
    index = {k: i for i, k in enumerate(keys)}
    index.update({k: index[v] for k, v in merge.items() if v in index})
    n = len(tl)
    ops = np.arange(n, dtype=np.int32)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    has_issue = (tl.issue_start != NO_TIME) & (tl.issue_end != NO_TIME)
    host = _host_rows(tl, index, devices)
    sel = has_issue & (host >= 0)
    parts.append((tl.issue_start[sel], tl.issue_end[sel], host[sel], ops[sel]))

    on_device = tl.on_device
    stream_map = np.array([index.get(stream_row(s), -1) for s in tl.stream_names] + [-1], np.int32)
    stream_rows = np.where(on_device, stream_map[tl.stream], -1)  # stream -1: the trailing -1
    stream_rows[_HOST_SPAN[tl.kind]] = -1
    sel = stream_rows >= 0
    parts.append((tl.start[sel], tl.end[sel], stream_rows[sel], ops[sel]))

    # the engines drawn as SM occupancy: by their row key
    if devices is None:
        occupied = {COMPUTE_ROW: compute_engine} if compute_engine is not None else {}
    else:
        occupied = {compute_row(devices.devices[d]): e for d, e in devices.compute_engine.items()}
    engine_keys = [engine_row(e) for e in tl.engine_names]
    for key, e in occupied.items():
        engine_keys[e] = key
    engine_map = np.array([index.get(k, -1) for k in engine_keys] + [-1], np.int32)
    rows = engine_map[tl.engine]
    sel = on_device & (rows >= 0)
    for key, e in occupied.items():
        if key not in merge:
            sel &= tl.engine != e  # drawn as SM occupancy instead
    parts.append((tl.start[sel], tl.end[sel], rows[sel], ops[sel]))
    if devices is not None and len(devices.link_op):
        parts.append(_link_bars(tl, index, devices))

    starts = np.concatenate([p[0] for p in parts])
    order = np.argsort(starts, kind="stable")
    out.bar_x0 = _us(starts[order], out.t0)
    out.bar_x1 = _us(np.concatenate([p[1] for p in parts])[order], out.t0)
    np.maximum(out.bar_x1, out.bar_x0, out=out.bar_x1)
    out.bar_row = np.concatenate([p[2] for p in parts])[order].astype(np.int32, copy=False)
    out.bar_op = np.concatenate([p[3] for p in parts])[order].astype(np.int32, copy=False)
    out.bar_kind = tl.kind[out.bar_op] if n else np.zeros(0, np.int8)
    if devices is None:
        _single_device_occupancy(out, tl)
    else:
        _device_occupancy(out, tl, devices)
        out.devices = list(devices.devices)
        out.collectives = collective_connectors(tl, stream_rows, out.t0)
    return out


def _host_rows(tl: Timeline, index: dict[str, int], devices: DeviceLayout | None) -> np.ndarray:
    """Each op's host row: the one host row, or its device's host thread's."""
    if devices is None:
        return np.full(len(tl), index.get(HOST_ROW, -1), np.int32)
    if getattr(tl, "thread_names", None):
        keys = op_host_rows(tl, devices.devices)
        return np.array([index.get(k, -1) for k in keys], np.int32).reshape(len(keys))
    per_device = np.array([index.get(host_row(d), -1) for d in devices.devices], np.int32)
    return per_device[devices.host_device]


def _link_bars(
    tl: Timeline, index: dict[str, int], devices: DeviceLayout
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A bar on a link's row for every op that used the link, over the op's device span."""
    link_map = np.array([index.get(link_row(n), -1) for n in devices.link_names] + [-1], np.int32)
    rows = link_map[devices.link_id]
    op = devices.link_op
    sel = (rows >= 0) & tl.on_device[op]
    op = op[sel]
    return tl.start[op], tl.end[op], rows[sel], op.astype(np.int32)


def _single_device_occupancy(out: ChartRows, tl: Timeline) -> None:
    if COMPUTE_ROW not in out.keys:
        return
    out.compute_row = out.keys.index(COMPUTE_ROW)
    samples = np.ones(len(tl.occupancy_time), bool)
    track = _occupancy_track(out, tl, out.compute_row, samples, np.ones(len(tl), bool))
    if track is not None:
        out.occupancy.append(track)
        out.occ_x, out.occ_frac, out.occ_capacity = track.x, track.frac, track.capacity
    if not len(tl.occupancy_time):
        out.titles[out.compute_row] = "Compute (kernels)"


def _device_occupancy(out: ChartRows, tl: Timeline, devices: DeviceLayout) -> None:
    """One SM-occupancy row per device: its samples, or its concurrent kernels."""
    kernel_device = np.where(tl.engine >= 0, devices.engine_device[np.maximum(tl.engine, 0)], -1)
    for d, device in enumerate(devices.devices):
        row = out.row_of(compute_row(device))
        if row is None:
            continue
        samples = devices.occupancy_device == d
        track = _occupancy_track(out, tl, row, samples, kernel_device == d)
        if track is not None:
            out.occupancy.append(track)
        if not samples.any():
            out.titles[row] = f"{device} kernels"
    if out.occupancy:
        first = out.occupancy[0]
        out.compute_row = first.row
        out.occ_x, out.occ_frac, out.occ_capacity = first.x, first.frac, first.capacity


def _occupancy_track(
    out: ChartRows, tl: Timeline, row: int, samples: np.ndarray, ops: np.ndarray
) -> OccupancyTrack | None:
    """SM occupancy from the timeline's ``samples``, or (measured runs often lack it)
    concurrent kernels among ``ops``."""
    if samples.any():
        times = tl.occupancy_time[samples]
        order = np.argsort(times, kind="stable")
        x = _us(times[order], out.t0)
        sms = tl.occupancy_sms[samples][order].astype(np.float64)
        cap = tl.sm_count if tl.sm_count > 0 else int(max(sms.max(), 1))
        counts_sms = True
    else:
        k = (tl.kind == _KERNEL) & tl.on_device & ops
        if not k.any():
            return None
        times = np.concatenate([tl.start[k], tl.end[k]])
        delta = np.concatenate([np.ones(k.sum()), -np.ones(k.sum())])
        order = np.lexsort((delta, times))  # ends before starts at the same time
        x = _us(times[order], out.t0)
        sms = np.cumsum(delta[order])
        cap = int(max(sms.max(), 1))
        counts_sms = False
    return OccupancyTrack(row, x, np.clip(sms / cap, 0.0, 1.0), cap, counts_sms)


@dataclass
class VisibleBars:
    """Bars inside a view, in pixels. ``op`` is -1 for merged sub-pixel runs."""

    px0: np.ndarray
    px1: np.ndarray
    row: np.ndarray
    op: np.ndarray
    kind: np.ndarray


def label_colour_codes(labels: list[str], ops: np.ndarray, n_colours: int) -> np.ndarray:
    """A stable colour number (0 to ``n_colours`` - 1) for each op in ``ops`` from its label.

    CRC-32 of the text, so a kernel keeps its colour across runs, charts and sessions
    (Python's ``hash`` of a str changes per process); each distinct label is hashed once.
    """
    texts = [labels[i] for i in ops.tolist()]
    code = {t: zlib.crc32(t.encode("utf-8")) % max(n_colours, 1) for t in dict.fromkeys(texts)}
    return np.fromiter(map(code.__getitem__, texts), np.int16, count=len(texts))


# -- time formatting and ticks ------------------------------------------------------------------

_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def time_unit(span_ns: float) -> tuple[float, str]:
    """The unit (ns per unit, name) that shows ``span_ns`` as a number from 1 to 1000."""
    for scale, name in _UNITS:
        if abs(span_ns) >= scale:
            return scale, name
    return 1.0, "ns"


def format_duration(ns: float) -> str:
    """``1.25 ms``, ``830 ns``: three significant figures in the unit that fits."""
    scale, name = time_unit(ns)
    v = ns / scale
    if name == "ns":
        return f"{v:.0f} ns"
    return f"{v:.3g} {name}" if abs(v) < 100 else f"{v:.1f} {name}".replace(".0 ", " ")


def nice_ticks(lo: float, hi: float, approx: int = 8) -> np.ndarray:
    """Round tick positions (1, 2, 5 x 10^k) covering [lo, hi]."""
    span = hi - lo
    if not np.isfinite(span) or span <= 0:
        return np.array([lo])
    raw = span / max(approx, 1)
    mag = 10 ** np.floor(np.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = np.ceil(lo / step) * step
    return np.arange(first, hi + step * 1e-9, step) + 0.0  # no "-0" tick


def tick_label(value_ns: float, unit: tuple[float, str], step_ns: float) -> str:
    """A tick's text in ``unit`` with just enough decimals for ``step_ns``."""
    scale, name = unit
    digits = max(0, int(-np.floor(np.log10(step_ns / scale) + 1e-9))) if step_ns > 0 else 0
    return f"{value_ns / scale:.{min(digits, 6)}f}"


def _anchor(rows: ChartRows, op: int, at_end: bool) -> tuple[float, float] | None:
    """Where an arrow meets an op: its stream bar if it ran on the device, else its API call."""
    tl = rows.timeline
    assert tl is not None
    if tl.start[op] != NO_TIME and tl.end[op] != NO_TIME and tl.stream[op] >= 0:
        row = rows.row_of(stream_row(tl.stream_names[int(tl.stream[op])]))
        t = tl.end[op] if at_end else tl.start[op]
    else:
        host = HOST_ROW
        if rows.devices and getattr(tl, "thread_names", None):
            host = op_host_rows(tl, rows.devices)[op]
        elif rows.devices:
            devices = getattr(tl, "host_device", None)
            d = int(devices[op]) if devices is not None and len(devices) == len(tl) else 0
            host = host_row(rows.devices[min(max(d, 0), len(rows.devices) - 1)])
        row = rows.row_of(host)
        t = tl.issue_end[op] if at_end else tl.issue_start[op]
    if row is None or t == NO_TIME:
        return None
    return (int(t) - rows.t0) / 1000.0, row + 0.5


def dependency_segments(
    rows: ChartRows, ops: np.ndarray, limit: int = 400
) -> list[tuple[float, float, float, float, int]]:
    """Arrows (x0, y0, x1, y1, dep kind) into and out of the given timeline rows."""
    tl = rows.timeline
    if tl is None or not len(ops) or not len(tl.dep_src):
        return []
    touch = np.isin(tl.dep_src, ops) | np.isin(tl.dep_dst, ops)
    # The ranks of one collective call start together: their edge joins the starts.
    together = DEP_KINDS.index("collective")
    out = []
    for e in np.flatnonzero(touch)[:limit].tolist():
        a = _anchor(rows, int(tl.dep_src[e]), at_end=int(tl.dep_kind[e]) != together)
        b = _anchor(rows, int(tl.dep_dst[e]), at_end=False)
        if a is not None and b is not None:
            out.append((a[0], a[1], b[0], b[1], int(tl.dep_kind[e])))
    return out


def occupancy_tooltip(rows: ChartRows, x_us: float, row: int | None = None) -> str:
    """What hovering an SM-occupancy row (``row``; the first one when None) at ``x_us``
    shows: SMs (or kernels) busy then."""
    track = rows.occupancy_at_row(row) if row is not None else None
    if track is None and row is None and rows.occupancy:
        track = rows.occupancy[0]
    if track is None or not len(track.x) or x_us < track.x[0]:
        return ""
    i = int(np.searchsorted(track.x, x_us, "right")) - 1
    frac = float(track.frac[min(i, len(track.frac) - 1)])
    busy = round(frac * track.capacity)
    at = f"at {format_duration(x_us * 1000.0)}"
    if track.sms:
        return f"{busy} of {track.capacity} SMs busy ({frac * 100:.0f} %) {at}"
    return f"{busy} kernel{'s' if busy != 1 else ''} running {at}"


def links_of_op(tl: Timeline, op: int) -> list[str]:
    """The links between devices that op ``op`` used (multi-device timelines)."""
    devices = device_layout(tl)
    if devices is None or not len(devices.link_op):
        return []
    return [devices.link_names[i] for i in devices.link_id[devices.link_op == op].tolist()]


def op_tooltip(tl: Timeline, op: int) -> str:
    """What hovering an op shows: op, stream, start, end, duration, bytes and achieved GB/s."""
    t0 = tl.t0
    kind = tl.op_kind(op)
    label = tl.labels[op] or kind.replace("_", " ")
    lines = [f"{label}  [{kind}, op #{int(tl.index[op])}]"]
    where = []
    device = tl.host_device_name(op)
    if device is not None:
        where.append(device)
    thread = tl.host_thread_name(op) if getattr(tl, "thread_names", None) else None
    if thread is not None:
        where.append(f"host thread {thread}")
    if tl.stream_name(op) is not None:
        where.append(f"stream {tl.stream_name(op)}")
    if tl.engine_name(op) is not None:
        where.append(f"engine {tl.engine_name(op)}")
    where += [f"link {name}" for name in links_of_op(tl, op)]
    if where:
        lines.append(", ".join(where))
    start, end = int(tl.start[op]), int(tl.end[op])
    if start != NO_TIME and end != NO_TIME:
        lines.append(f"start {format_duration(start - t0)}   end {format_duration(end - t0)}")
        lines.append(f"duration {format_duration(end - start)}")
    a, b = int(tl.issue_start[op]), int(tl.issue_end[op])
    if a != NO_TIME and b != NO_TIME:
        lines.append(f"host call {format_duration(a - t0)} to {format_duration(b - t0)}")
    nbytes = int(tl.bytes[op])
    if nbytes:
        text = format_bytes(nbytes)
        if start != NO_TIME and end > start:
            text += f", {nbytes / (end - start):.1f} GB/s achieved"
        lines.append(text)
    return "\n".join(lines)
