"""A timeline's columns as its file holds them: the NO_TIME mark, the per-op int columns and
their dtypes, each column's allowed range, and the checks a timeline file's columns and
multi-device fields go through when loaded (``Timeline.from_dict``; the file schema,
:mod:`swimlanes.timeline.schema`, is built from the same tables)."""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

#: Marks "no time" in a time column (host-only ops have no device span).
NO_TIME = np.iinfo(np.int64).min

#: The per-op int64 columns of a timeline, and the narrower ones with their dtypes.
INT_COLUMNS = ("index", "issue_start", "issue_end", "start", "end", "solo_ns", "bytes")
SMALL_COLUMNS = {"kind": np.int8, "stream": np.int16, "engine": np.int16}

#: Times (and durations) must stay within this many ns of 0 (about 146 years), so that a
#: difference or a sum of two of them still fits in int64.
TIME_LIMIT_NS = 2**62
_TIME = (-TIME_LIMIT_NS + 1, TIME_LIMIT_NS - 1)
# Allowed range and dtype of each column (times may also be NO_TIME).
COLUMN_RANGE: dict[str, tuple[int, int, Any]] = {
    "index": (-(2**62), 2**62, np.int64),
    "issue_start": (*_TIME, np.int64),
    "issue_end": (*_TIME, np.int64),
    "start": (*_TIME, np.int64),
    "end": (*_TIME, np.int64),
    "solo_ns": (*_TIME, np.int64),
    "bytes": (0, 2**62, np.int64),
    "kind": (0, np.iinfo(np.int8).max, np.int8),
    "stream": (-1, np.iinfo(np.int16).max, np.int16),
    "engine": (-1, np.iinfo(np.int16).max, np.int16),
    "start_spread": (*_TIME, np.int64),
    "end_spread": (*_TIME, np.int64),
    "occupancy_time": (*_TIME, np.int64),
    "dep": (0, np.iinfo(np.int32).max, np.int32),
    "sms": (0, np.iinfo(np.int32).max, np.int32),
    "device": (0, np.iinfo(np.int16).max, np.int16),
    "link_op": (0, np.iinfo(np.int32).max, np.int32),
    "link_id": (0, np.iinfo(np.int16).max, np.int16),
}
TIME_COLUMNS = {"issue_start", "issue_end", "start", "end", "solo_ns", "start_spread", "end_spread"}


def devices_from_dict(data: dict[str, Any]) -> dict[str, Any]:
    """The multi-device fields of a timeline file (``devices``, ``links``; both optional)."""
    out: dict[str, Any] = {}
    devices = member(data, "devices", dict, {})
    if devices:
        out["device_names"] = [str(x) for x in member(devices, "names", list, None, "devices.")]
        for key, col in (("stream", "stream_device"), ("engine", "engine_device"),
                         ("host", "host_device"), ("occupancy", "occupancy_device")):  # fmt: skip
            out[col] = int_list(
                f"devices.{key}", member(devices, key, list, [], "devices."), "device"
            )
    links = member(data, "links", dict, {})
    if links:
        out["link_names"] = [str(x) for x in member(links, "names", list, None, "links.")]
        out["link_op"] = int_list("links.op", member(links, "op", list, [], "links."), "link_op")
        out["link_id"] = int_list(
            "links.link", member(links, "link", list, [], "links."), "link_id"
        )
    return out


def member(data: dict[str, Any], key: str, kind: type, default: Any, where: str = "") -> Any:
    """``data[key]``, which must be a ``kind`` (an int64 array passes for a list); missing:
    ``default``, or an error when that is None."""
    if key not in data:
        if default is None:
            raise ValueError(f"{where}{key}: missing")
        return default
    v = data[key]
    if isinstance(v, kind) or (kind is list and isinstance(v, array | np.ndarray)):
        return v
    raise ValueError(f"{where}{key}: must be a JSON {'object' if kind is dict else 'list'}")


def int_list(where: str, values: Any, column: str) -> np.ndarray:
    """``values`` as the column's dtype, each an integer in the column's range."""
    low, high, dtype = COLUMN_RANGE[column]
    no_time = NO_TIME if column in TIME_COLUMNS else low
    if isinstance(values, list):
        bad = next(
            (i for i, v in enumerate(values)
             if type(v) is not int or not (low <= v <= high or v == no_time)),
            None,
        )  # fmt: skip
    else:
        arr = np.asarray(values, dtype=np.int64)
        out = ((arr < low) | (arr > high)) & (arr != no_time)
        bad = int(np.argmax(out)) if out.any() else None
    if bad is not None:
        raise ValueError(f"{where}[{bad}]: must be an integer from {low:,} to {high:,}")
    return np.asarray(values, dtype=dtype)
