"""The rows of a multi-device timeline (no Qt): per device its host thread, streams, engines
and SM occupancy; the links between devices; and which bars are one collective.

A timeline is multi-device when it names its devices (``Timeline.device_names``); its
``stream_device``, ``engine_device`` and ``host_device`` columns say which device each stream,
engine and host call belongs to, ``link_op``/``link_id`` which ops used which link, and
``occupancy_device`` whose SMs each occupancy sample counts. Single-device timelines leave
them empty and keep the single-device rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from swimlanes.model.document import COLLECTIVE_OPS, OP_KINDS
from swimlanes.timeline.timeline import Timeline
from swimlanes.ui.gantt.row_keys import (
    compute_row,
    engine_row,
    host_row,
    link_row,
    row_device,
    stream_row,
    thread_row,
)

_KERNEL = OP_KINDS.index("kernel")
_COLLECTIVE_KINDS = np.array([OP_KINDS.index(k) for k in COLLECTIVE_OPS], np.int8)


def _column(tl: Timeline, name: str, length: int, dtype: type = np.int16) -> np.ndarray:
    """A per-device column of ``tl``, or zeros (the first device) when it is absent or short."""
    value = getattr(tl, name, None)
    arr = np.zeros(0, dtype) if value is None else np.asarray(value)
    if len(arr) != length:
        return np.zeros(length, dtype)
    return arr.astype(np.int64)


def _array(tl: Timeline, name: str) -> np.ndarray:
    value = getattr(tl, name, None)
    return np.zeros(0, np.int64) if value is None else np.asarray(value, np.int64)


@dataclass
class DeviceLayout:
    """Which device each stream, engine and host call of a timeline belongs to."""

    devices: list[str]
    stream_device: np.ndarray
    engine_device: np.ndarray
    host_device: np.ndarray
    #: Per device index, the engine its kernels run on (drawn as SM occupancy).
    compute_engine: dict[int, int]
    link_names: list[str]
    link_op: np.ndarray
    link_id: np.ndarray
    occupancy_device: np.ndarray

    def device_of_op(self, op: int) -> str:
        return self.devices[int(self.host_device[op])]


def device_layout(tl: Timeline | None) -> DeviceLayout | None:
    """The devices of a multi-device timeline, or None for a single-device one."""
    devices = list(getattr(tl, "device_names", None) or []) if tl is not None else []
    if tl is None or not devices:
        return None
    n_dev = len(devices)
    stream_device = np.clip(_column(tl, "stream_device", len(tl.stream_names)), 0, n_dev - 1)
    engine_device = np.clip(_column(tl, "engine_device", len(tl.engine_names)), 0, n_dev - 1)
    host_device = np.clip(_column(tl, "host_device", len(tl)), 0, n_dev - 1)
    link_names = list(getattr(tl, "link_names", None) or [])
    link_op = _array(tl, "link_op")
    link_id = _array(tl, "link_id")
    if len(link_op) != len(link_id):
        link_op = link_id = np.zeros(0, np.int64)
    ok = (link_id >= 0) & (link_id < len(link_names)) & (link_op >= 0) & (link_op < len(tl))
    occupancy_device = _column(tl, "occupancy_device", len(tl.occupancy_time))
    compute: dict[int, int] = {}
    kernels = (tl.kind == _KERNEL) & (tl.engine >= 0)
    if kernels.any():
        engines = tl.engine[kernels].astype(np.int64)
        for d in range(n_dev):
            mine = engines[engine_device[engines] == d]
            if len(mine):
                compute[d] = int(np.bincount(mine).argmax())
    return DeviceLayout(
        devices,
        stream_device,
        engine_device,
        host_device,
        compute,
        link_names,
        link_op[ok],
        link_id[ok],
        occupancy_device,
    )


def device_row_keys(tl: Timeline, layout: DeviceLayout) -> list[str]:
    """Rows of a multi-device timeline in their natural order: per device its host thread,
    streams (declared ones, even idle), engines and SM occupancy; then the links used."""
    used_engines = set(np.unique(tl.engine[tl.engine >= 0]).tolist())
    occupied = set(np.unique(layout.occupancy_device).tolist())
    keys: list[str] = []
    for d, device in enumerate(layout.devices):
        keys += host_rows_of(tl, d, device)
        keys += [
            stream_row(name)
            for i, name in enumerate(tl.stream_names)
            if layout.stream_device[i] == d
        ]
        keys += [
            engine_row(name)
            for i, name in enumerate(tl.engine_names)
            if layout.engine_device[i] == d
            and i in used_engines
            and i != layout.compute_engine.get(d)
        ]
        if d in layout.compute_engine or d in occupied:
            keys.append(compute_row(device))
    used_links = sorted(set(layout.link_id.tolist()))
    keys += [link_row(layout.link_names[i]) for i in used_links]
    return keys


def row_devices(tl: Timeline | None) -> dict[str, str]:
    """Row key -> device name for the rows of a multi-device timeline (empty for a
    single-device one; links belong to no device)."""
    layout = device_layout(tl)
    if tl is None or layout is None:
        return {}
    out: dict[str, str] = {}
    for i, name in enumerate(tl.stream_names):
        out[stream_row(name)] = layout.devices[int(layout.stream_device[i])]
    for i, name in enumerate(tl.engine_names):
        out[engine_row(name)] = layout.devices[int(layout.engine_device[i])]
    for d, device in enumerate(layout.devices):
        out.update((key, device) for key in host_rows_of(tl, d, device))
        out[compute_row(device)] = device
    return out


def host_rows_of(tl: Timeline, d: int, device: str) -> list[str]:
    """The host rows of device ``d``: one per host thread where the timeline has several
    (``thread_names``), else the device's one."""
    names = list(getattr(tl, "thread_names", None) or [])
    if not names:
        return [host_row(device)]
    owners = _column(tl, "thread_device", len(names))
    return [thread_row(device, t) for t, owner in zip(names, owners.tolist(), strict=True)
            if owner == d] or [host_row(device)]  # fmt: skip


def op_host_rows(tl: Timeline, devices: list[str]) -> list[str]:
    """Each op's host row key: its thread's, or its device's host thread's."""
    names = list(getattr(tl, "thread_names", None) or [])
    host_device = np.clip(_column(tl, "host_device", len(tl)), 0, max(0, len(devices) - 1))
    if not names:
        return [host_row(devices[d]) for d in host_device.tolist()]
    owners = np.clip(_column(tl, "thread_device", len(names)), 0, len(devices) - 1).tolist()
    keys = [thread_row(devices[owners[k]], name) for k, name in enumerate(names)]
    thread = np.clip(_column(tl, "host_thread", len(tl)), 0, len(names) - 1)
    return [keys[k] for k in thread.tolist()]


def device_of_row(key: str, devices: dict[str, str]) -> str | None:
    """The device of row ``key``: from ``devices`` (see :func:`row_devices`) or its key."""
    return devices.get(key) or row_device(key)


def collective_connectors(tl: Timeline, bar_row_of_op: np.ndarray, t0: int) -> np.ndarray:
    """One (x0 µs, x1 µs, top row, bottom row) per collective instance drawn on at least two
    rows: ops of one collective kind with the same start and end (the engine starts and ends
    every participant together). ``bar_row_of_op`` is each op's stream row (-1: not shown)."""
    empty = np.zeros((0, 4))
    if not len(tl):
        return empty
    sel = np.flatnonzero(np.isin(tl.kind, _COLLECTIVE_KINDS) & tl.on_device & (bar_row_of_op >= 0))
    if len(sel) < 2:
        return empty
    triples = np.stack([tl.kind[sel].astype(np.int64), tl.start[sel], tl.end[sel]], axis=1)
    groups, inverse = np.unique(triples, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    rows = bar_row_of_op[sel].astype(np.int64)
    lo = np.full(len(groups), np.iinfo(np.int64).max)
    hi = np.full(len(groups), -1)
    np.minimum.at(lo, inverse, rows)
    np.maximum.at(hi, inverse, rows)
    spans = lo < hi
    if not spans.any():
        return empty
    g = groups[spans]
    x0 = (g[:, 1] - t0).astype(np.float64) / 1000.0
    x1 = (g[:, 2] - t0).astype(np.float64) / 1000.0
    out = np.stack([x0, x1, lo[spans].astype(np.float64), hi[spans].astype(np.float64)], axis=1)
    return out[np.argsort(out[:, 0], kind="stable")]
