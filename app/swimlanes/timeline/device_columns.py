"""A multi-device timeline's device columns and link usage: their checks and their JSON keys
(``devices``, ``links``), written only when set so that a single-device timeline's file keeps
its shape. The fields themselves are :class:`~swimlanes.timeline.timeline.Timeline`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from swimlanes.timeline.timeline import Timeline


def check_device_columns(tl: Timeline) -> None:
    """The multi-device columns are all empty, or each as long as what it describes, with
    every index in range (ValueError naming the column otherwise)."""
    n = len(tl.index)
    if len(tl.link_op) != len(tl.link_id):
        raise ValueError(f"link_op has {len(tl.link_op)} rows, link_id {len(tl.link_id)}")
    check_index("link_op", tl.link_op, n)
    check_index("link_id", tl.link_id, len(tl.link_names))
    if not tl.device_names:
        for col in ("stream_device", "engine_device", "host_device", "occupancy_device"):
            if len(getattr(tl, col)):
                raise ValueError(f"{col} is set but device_names is empty")
        return
    expected = {
        "stream_device": len(tl.stream_names),
        "engine_device": len(tl.engine_names),
        "host_device": n,
        "occupancy_device": len(tl.occupancy_time),
    }
    for col, rows in expected.items():
        arr = getattr(tl, col)
        if len(arr) != rows:
            raise ValueError(f"{col} has {len(arr)} rows, expected {rows}")
        check_index(col, arr, len(tl.device_names))


def check_index(column: str, values: np.ndarray, size: int) -> None:
    """Every value of ``values`` indexes a list of ``size`` entries."""
    if len(values) and (int(values.min()) < 0 or int(values.max()) >= size):
        bad = int(np.flatnonzero((values < 0) | (values >= size))[0])
        raise ValueError(f"{column}[{bad}]: {int(values[bad])} is not an index below {size}")


def device_columns_dict(tl: Timeline) -> dict[str, Any]:
    """The multi-device keys of the timeline's JSON form, only where set."""
    out: dict[str, Any] = {}
    if tl.device_names:
        out["devices"] = {
            "names": list(tl.device_names),
            "stream": tl.stream_device.tolist(),
            "engine": tl.engine_device.tolist(),
            "host": tl.host_device.tolist(),
            "occupancy": tl.occupancy_device.tolist(),
        }
    if tl.link_names or len(tl.link_op):
        out["links"] = {
            "names": list(tl.link_names),
            "op": tl.link_op.tolist(),
            "link": tl.link_id.tolist(),
        }
    return out
