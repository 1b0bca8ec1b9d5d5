"""The result type shared by the simulator, the GPU executor and trace import.

A :class:`Timeline` is columnar, like Perfetto's slice table: one row per op (program order for
pipelines, host issue order for imported traces), numpy columns, integer nanoseconds. Lanes are derived:
one per stream, one per engine, and the host thread (the ops' issue spans).

A multi-device timeline (several GPUs, each with its own engines and host thread) adds the
device columns (``device_names``, ``stream_device``, ``engine_device``, ``host_device``,
``occupancy_device``) and the link usage (``link_names``, ``link_op``, ``link_id``); they stay
empty for a single device, so single-device timelines and their files are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from swimlanes.model.document import OP_KINDS
from swimlanes.timeline.columns import (
    INT_COLUMNS,
    NO_TIME,
    SMALL_COLUMNS,
    devices_from_dict,
    int_list,
    member,
)
from swimlanes.timeline.columns import (  # (the trace readers import it from here)
    TIME_LIMIT_NS as TIME_LIMIT_NS,
)
from swimlanes.timeline.device_columns import check_device_columns, device_columns_dict
from swimlanes.timeline.json_rows import op_rows
from swimlanes.timeline.thread_columns import (
    check_thread_columns,
    empty_column,
    thread_columns_dict,
    threads_from_dict,
)

#: Kinds of dependency edges between ops, drawn as arrows.
#: "collective": the ops of one NCCL collective call on its devices, from its first rank's op
#: to each other rank's (they start together, when the last of them is ready). Appended: the
#: ``dep_kind`` column indexes this tuple.
DEP_KINDS: tuple[str, ...] = (
    "stream", "event", "default_stream", "queue", "host", "flow", "collective",
)  # fmt: skip

SOURCES = ("simulated", "measured")

TIMELINE_FORMAT = "swimlanes-timeline"
TIMELINE_VERSION = 1


def device_span_ns(start: np.ndarray, end: np.ndarray) -> int:
    """First device start to last device end of ``start``/``end`` columns (NO_TIME: no span);
    0 when no op has a device span."""
    on = (start != NO_TIME) & (end != NO_TIME)
    return int(end[on].max() - start[on].min()) if on.any() else 0


def _empty(dtype: Any = np.int64) -> np.ndarray:
    return np.zeros(0, dtype=dtype)


@dataclass
class Timeline:
    """Per-op columns (all the same length) plus lane names, dependencies and SM occupancy.

    ``kind`` indexes :data:`OP_KINDS`; ``stream`` indexes ``stream_names`` (-1: none);
    ``engine`` indexes ``engine_names`` (-1: runs on no engine). ``start``/``end`` are the device
    span, ``issue_start``/``issue_end`` the host API call; missing times are :data:`NO_TIME`.
    ``solo_ns`` is how long the op takes alone on the device (serial time is their sum).
    ``start_spread``/``end_spread`` hold the measured spread (p90 - p10) over repetitions.
    """

    index: np.ndarray = field(default_factory=_empty)
    kind: np.ndarray = field(default_factory=lambda: _empty(np.int8))
    stream: np.ndarray = field(default_factory=lambda: _empty(np.int16))
    engine: np.ndarray = field(default_factory=lambda: _empty(np.int16))
    issue_start: np.ndarray = field(default_factory=_empty)
    issue_end: np.ndarray = field(default_factory=_empty)
    start: np.ndarray = field(default_factory=_empty)
    end: np.ndarray = field(default_factory=_empty)
    solo_ns: np.ndarray = field(default_factory=_empty)
    bytes: np.ndarray = field(default_factory=_empty)
    labels: list[str] = field(default_factory=list)
    stream_names: list[str] = field(default_factory=list)
    engine_names: list[str] = field(default_factory=list)
    start_spread: np.ndarray | None = None
    end_spread: np.ndarray | None = None
    dep_src: np.ndarray = field(default_factory=lambda: _empty(np.int32))
    dep_dst: np.ndarray = field(default_factory=lambda: _empty(np.int32))
    dep_kind: np.ndarray = field(default_factory=lambda: _empty(np.int8))
    occupancy_time: np.ndarray = field(default_factory=_empty)
    occupancy_sms: np.ndarray = field(default_factory=lambda: _empty(np.int32))
    sm_count: int = 0
    source: str = "simulated"
    device: str = ""
    name: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    #: The devices of a multi-device timeline (empty: one device).
    device_names: list[str] = field(default_factory=list)
    #: Per ``stream_names`` entry, its device (an index into ``device_names``).
    stream_device: np.ndarray = field(default_factory=lambda: _empty(np.int16))
    #: Per ``engine_names`` entry, its device.
    engine_device: np.ndarray = field(default_factory=lambda: _empty(np.int16))
    #: Per op row, the device whose host thread issued it.
    host_device: np.ndarray = field(default_factory=lambda: _empty(np.int16))
    #: Links between devices ("NVLink gpu0→gpu1"); op row ``link_op[i]`` used link
    #: ``link_id[i]`` over its [start, end] (an op may use several links: several entries).
    link_names: list[str] = field(default_factory=list)
    link_op: np.ndarray = field(default_factory=lambda: _empty(np.int32))
    link_id: np.ndarray = field(default_factory=lambda: _empty(np.int16))
    #: Parallel to ``occupancy_time``: which device's SMs each sample counts.
    occupancy_device: np.ndarray = field(default_factory=lambda: _empty(np.int16))
    #: The host threads of a program with several (empty: one per device); see
    #: :mod:`swimlanes.timeline.thread_columns`.
    thread_names: list[str] = field(default_factory=list)
    thread_device: np.ndarray = field(default_factory=empty_column)
    host_thread: np.ndarray = field(default_factory=empty_column)

    def __post_init__(self) -> None:
        n = len(self.index)
        for col in (*INT_COLUMNS, *SMALL_COLUMNS):
            if len(getattr(self, col)) != n:
                raise ValueError(f"column {col} has {len(getattr(self, col))} rows, expected {n}")
        if len(self.labels) != n:
            raise ValueError(f"labels has {len(self.labels)} rows, expected {n}")
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}")
        check_device_columns(self)
        check_thread_columns(self)

    # -- shape ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.index)

    def op_kind(self, row: int) -> str:
        return OP_KINDS[int(self.kind[row])]

    def stream_name(self, row: int) -> str | None:
        s = int(self.stream[row])
        return self.stream_names[s] if s >= 0 else None

    def engine_name(self, row: int) -> str | None:
        e = int(self.engine[row])
        return self.engine_names[e] if e >= 0 else None

    @property
    def is_multi_device(self) -> bool:
        """Whether the timeline has device columns (a multi-device pipeline's schedule)."""
        return bool(self.device_names)

    def host_device_name(self, row: int) -> str | None:
        """The device whose host thread issued op ``row`` (None: a single-device timeline)."""
        return self.device_names[int(self.host_device[row])] if self.device_names else None

    def host_thread_name(self, row: int) -> str | None:
        """The host thread that issued op ``row`` (None: one thread per device)."""
        return self.thread_names[int(self.host_thread[row])] if self.thread_names else None

    def links_of(self, row: int) -> list[str]:
        """The links op ``row`` used (empty for most ops)."""
        hits = np.flatnonzero(self.link_op == row)
        return [self.link_names[int(self.link_id[k])] for k in hits]

    @property
    def on_device(self) -> np.ndarray:
        """Mask of rows with a device span."""
        return (self.start != NO_TIME) & (self.end != NO_TIME)

    @property
    def device_span_ns(self) -> int:
        """From the first op's start on the device to the last op's end (0: none ran there)."""
        return device_span_ns(self.start, self.end)

    def row_of_index(self, program_index: int) -> int | None:
        hits = np.flatnonzero(self.index == program_index)
        return int(hits[0]) if len(hits) else None

    # -- times ----------------------------------------------------------------------------------
    @property
    def t0(self) -> int:
        """The earliest time in the timeline (host or device)."""
        cands = [c[c != NO_TIME] for c in (self.issue_start, self.start)]
        cands = [c for c in cands if len(c)]
        return int(min(c.min() for c in cands)) if cands else 0

    @property
    def t_end(self) -> int:
        cands = [c[c != NO_TIME] for c in (self.issue_end, self.end)]
        cands = [c for c in cands if len(c)]
        return int(max(c.max() for c in cands)) if cands else 0

    @property
    def makespan_ns(self) -> int:
        """From the first host call to the last thing done, host or device."""
        return self.t_end - self.t0 if len(self) else 0

    def shifted(self, offset_ns: int) -> Timeline:
        """A copy with every time moved by ``offset_ns`` (NO_TIME stays)."""
        out = self.copy()
        for col in ("issue_start", "issue_end", "start", "end"):
            arr = getattr(out, col)
            mask = arr != NO_TIME
            arr[mask] += offset_ns
        out.occupancy_time = out.occupancy_time + offset_ns
        return out

    def relative(self) -> Timeline:
        """A copy whose earliest time is 0."""
        return self.shifted(-self.t0)

    def copy(self) -> Timeline:
        kwargs: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            v = getattr(self, name)
            if isinstance(v, np.ndarray):
                v = v.copy()
            elif isinstance(v, list | dict):
                v = type(v)(v)
            kwargs[name] = v
        return Timeline(**kwargs)

    # -- JSON -----------------------------------------------------------------------------------
    def ops_json(self) -> list[dict[str, Any]]:
        """Per-op rows in the CLI's JSON shape (microseconds, relative to ``t0``); built a
        column at a time by :mod:`swimlanes.timeline.json_rows`."""
        return op_rows(self)

    def to_dict(self) -> dict[str, Any]:
        """Lossless JSON form (``swimlanes-timeline`` v1), used for saved measurements."""
        cols = {c: getattr(self, c).tolist() for c in (*INT_COLUMNS, *SMALL_COLUMNS)}
        if self.start_spread is not None and self.end_spread is not None:
            cols["start_spread"] = self.start_spread.tolist()
            cols["end_spread"] = self.end_spread.tolist()
        return {
            "format": TIMELINE_FORMAT,
            "version": TIMELINE_VERSION,
            "name": self.name,
            "source": self.source,
            "device": self.device,
            "meta": self.meta,
            "stream_names": self.stream_names,
            "engine_names": self.engine_names,
            "labels": self.labels,
            "columns": cols,
            "deps": {
                "src": self.dep_src.tolist(),
                "dst": self.dep_dst.tolist(),
                "kind": [DEP_KINDS[k] for k in self.dep_kind.tolist()],
            },
            "occupancy": {
                "sm_count": self.sm_count,
                "time": self.occupancy_time.tolist(),
                "sms": self.occupancy_sms.tolist(),
            },
            **device_columns_dict(self),
            **thread_columns_dict(self),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Timeline:
        """Inverse of :meth:`to_dict`; raises ValueError naming the bad value by its JSON path
        (``columns.end[3]: ...``). Lists of integers may also come as int64 arrays."""
        if not isinstance(data, dict) or data.get("format") != TIMELINE_FORMAT:
            raise ValueError(f"not a {TIMELINE_FORMAT} file")
        if data.get("version") != TIMELINE_VERSION:
            raise ValueError(
                f"unsupported timeline version {data.get('version')!r} "
                f"(this Swimlanes reads {TIMELINE_VERSION})"
            )
        cols = member(data, "columns", dict, None)
        kwargs: dict[str, Any] = {
            c: int_list(f"columns.{c}", member(cols, c, list, None, "columns."), c)
            for c in (*INT_COLUMNS, *SMALL_COLUMNS)
        }
        if "start_spread" in cols or "end_spread" in cols:
            for c in ("start_spread", "end_spread"):
                kwargs[c] = int_list(f"columns.{c}", member(cols, c, list, None, "columns."), c)
        deps = member(data, "deps", dict, {})
        occ = member(data, "occupancy", dict, {})
        kinds = member(deps, "kind", list, [], "deps.")
        unknown = next((i for i, k in enumerate(kinds) if k not in DEP_KINDS), None)
        if unknown is not None:
            raise ValueError(f"deps.kind[{unknown}]: {kinds[unknown]!r} is not a dependency kind")
        sm_count = occ.get("sm_count", 0)
        if type(sm_count) is not int or not 0 <= sm_count < 2**31:
            raise ValueError("occupancy.sm_count: must be a count")
        return cls(
            **kwargs,
            labels=[str(x) for x in member(data, "labels", list, None)],
            stream_names=[str(x) for x in member(data, "stream_names", list, None)],
            engine_names=[str(x) for x in member(data, "engine_names", list, None)],
            dep_src=int_list("deps.src", member(deps, "src", list, [], "deps."), "dep"),
            dep_dst=int_list("deps.dst", member(deps, "dst", list, [], "deps."), "dep"),
            dep_kind=np.asarray([DEP_KINDS.index(k) for k in kinds], dtype=np.int8),
            occupancy_time=int_list(
                "occupancy.time", member(occ, "time", list, [], "occupancy."), "occupancy_time"
            ),
            occupancy_sms=int_list(
                "occupancy.sms", member(occ, "sms", list, [], "occupancy."), "sms"
            ),
            sm_count=sm_count,
            source=str(data.get("source", "measured")),
            device=str(data.get("device", "")),
            name=str(data.get("name", "")),
            meta=member(data, "meta", dict, {}),
            **devices_from_dict(data),
            **threads_from_dict(data, int_list),
        )


class TimelineBuilder:
    """Collects rows one at a time (simulator, executor, importers) and builds a Timeline."""

    def __init__(self, stream_names: list[str], engine_names: list[str]) -> None:
        self.stream_names = list(stream_names)
        self.engine_names = list(engine_names)
        self._rows: dict[str, list[int]] = {
            c: [] for c in (*INT_COLUMNS, *SMALL_COLUMNS, "start_spread", "end_spread")
        }
        self.labels: list[str] = []
        self._deps: tuple[list[int], list[int], list[int]] = ([], [], [])

    def add(
        self,
        *,
        index: int,
        kind: str,
        stream: str | None,
        engine: str | None,
        issue_start: int,
        issue_end: int,
        start: int = NO_TIME,
        end: int = NO_TIME,
        solo_ns: int = NO_TIME,
        nbytes: int = 0,
        label: str = "",
        start_spread: int = NO_TIME,
        end_spread: int = NO_TIME,
    ) -> int:
        """Append one op; returns its row."""
        if stream is not None and stream not in self.stream_names:
            self.stream_names.append(stream)
        if engine is not None and engine not in self.engine_names:
            self.engine_names.append(engine)
        r = self._rows
        r["index"].append(index)
        r["kind"].append(OP_KINDS.index(kind))
        r["stream"].append(self.stream_names.index(stream) if stream is not None else -1)
        r["engine"].append(self.engine_names.index(engine) if engine is not None else -1)
        r["issue_start"].append(issue_start)
        r["issue_end"].append(issue_end)
        r["start"].append(start)
        r["end"].append(end)
        r["solo_ns"].append(solo_ns)
        r["bytes"].append(nbytes)
        r["start_spread"].append(start_spread)
        r["end_spread"].append(end_spread)
        self.labels.append(label)
        return len(self.labels) - 1

    def add_dep(self, src_row: int, dst_row: int, kind: str) -> None:
        self._deps[0].append(src_row)
        self._deps[1].append(dst_row)
        self._deps[2].append(DEP_KINDS.index(kind))

    def build(self, *, with_spread: bool = False, **kwargs: Any) -> Timeline:
        """Make the Timeline; ``kwargs`` set the non-column fields (source, device, ...)."""
        cols: dict[str, Any] = {c: np.asarray(self._rows[c], dtype=np.int64) for c in INT_COLUMNS}
        for c, dt in SMALL_COLUMNS.items():
            cols[c] = np.asarray(self._rows[c], dtype=dt)
        if with_spread:
            cols["start_spread"] = np.asarray(self._rows["start_spread"], dtype=np.int64)
            cols["end_spread"] = np.asarray(self._rows["end_spread"], dtype=np.int64)
        return Timeline(
            **cols,
            labels=self.labels,
            stream_names=self.stream_names,
            engine_names=self.engine_names,
            dep_src=np.asarray(self._deps[0], dtype=np.int32),
            dep_dst=np.asarray(self._deps[1], dtype=np.int32),
            dep_kind=np.asarray(self._deps[2], dtype=np.int8),
            **kwargs,
        )
