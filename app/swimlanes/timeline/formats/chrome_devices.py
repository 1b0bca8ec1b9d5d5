"""Reading a multi-device timeline back from a Chrome trace Swimlanes exported: its devices'
processes joined into one timeline, with its device columns and link usage."""

from __future__ import annotations

from typing import Any

import numpy as np

from swimlanes.timeline.timeline import Timeline


def device_pids(top: dict[str, Any]) -> dict[Any, Any]:
    """The process of each device of a multi-device timeline mapped to the timeline's own
    process (from ``otherData``), so that its devices' events join into one timeline."""
    other = top.get("otherData")
    info = other.get("timelines") if isinstance(other, dict) else None
    out: dict[Any, Any] = {}
    for item in info if isinstance(info, list) else []:
        devices = item.get("devices") if isinstance(item, dict) else None
        for d in devices if isinstance(devices, list) else []:
            if isinstance(d, dict) and isinstance(d.get("pid"), int):
                out[d["pid"]] = item.get("pid")
    return out


def device_names(pid: Any, top: dict[str, Any]) -> list[str]:
    other = top.get("otherData")
    info = other.get("timelines") if isinstance(other, dict) else None
    for item in info if isinstance(info, list) else []:
        if isinstance(item, dict) and item.get("pid") == pid:
            devices = item.get("devices")
            if isinstance(devices, list):
                return [str(d.get("name")) for d in devices if isinstance(d, dict)]
    return []


def with_devices(tl: Timeline, names: list[str], ops: list[dict], links: list[dict]) -> Timeline:
    """``tl`` (rebuilt from ``ops``, in order) with its device columns from the events'
    ``device`` args and its link usage from the ``link`` events."""
    known = {n: i for i, n in enumerate(names)}
    host = [known.get(e["args"].get("device"), 0) for e in ops]
    stream_device = [0] * len(tl.stream_names)
    for row in range(len(ops)):
        s = int(tl.stream[row])
        if s >= 0:
            stream_device[s] = host[row]
    engine_device = [known.get(n.split(" ", 1)[0], 0) for n in tl.engine_names]
    row_of = {int(i): r for r, i in enumerate(tl.index.tolist())}
    link_names: list[str] = []
    link_op, link_id = [], []
    for e in links:
        name, r = str(e["args"].get("link")), row_of.get(e["args"].get("index"))
        if r is None:
            continue
        if name not in link_names:
            link_names.append(name)
        link_op.append(r)
        link_id.append(link_names.index(name))
    tl.device_names = names
    tl.host_device = np.asarray(host, dtype=np.int16)
    tl.stream_device = np.asarray(stream_device, dtype=np.int16)
    tl.engine_device = np.asarray(engine_device, dtype=np.int16)
    tl.link_names = link_names
    tl.link_op = np.asarray(link_op, dtype=np.int32)
    tl.link_id = np.asarray(link_id, dtype=np.int16)
    tl.occupancy_device = np.zeros(len(tl.occupancy_time), dtype=np.int16)
    tl.__post_init__()
    return tl
