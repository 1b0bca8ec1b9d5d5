"""A timeline's host-thread columns (a program with several host threads): their checks and
their JSON key (``threads``), written only when set so that every other timeline's file keeps
its shape. The fields themselves are :class:`~swimlanes.timeline.timeline.Timeline`'s:
``thread_names`` (one per host thread), ``thread_device`` (each thread's device, an index into
``device_names``) and ``host_thread`` (per op row, the thread that issued it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from swimlanes.timeline.device_columns import check_index

if TYPE_CHECKING:
    from swimlanes.timeline.timeline import Timeline


def check_thread_columns(tl: Timeline) -> None:
    """The thread columns are all empty, or each as long as what it describes with every
    index in range (ValueError naming the column otherwise)."""
    if not tl.thread_names:
        for col in ("thread_device", "host_thread"):
            if len(getattr(tl, col)):
                raise ValueError(f"{col} is set but thread_names is empty")
        return
    if not tl.device_names:
        raise ValueError("thread_names is set but device_names is empty")
    for col, rows in (("thread_device", len(tl.thread_names)), ("host_thread", len(tl.index))):
        arr = getattr(tl, col)
        if len(arr) != rows:
            raise ValueError(f"{col} has {len(arr)} rows, expected {rows}")
    check_index("thread_device", tl.thread_device, len(tl.device_names))
    check_index("host_thread", tl.host_thread, len(tl.thread_names))


def thread_columns_dict(tl: Timeline) -> dict[str, Any]:
    """The ``threads`` key of the timeline's JSON form, only where set."""
    if not tl.thread_names:
        return {}
    return {
        "threads": {
            "names": list(tl.thread_names),
            "device": tl.thread_device.tolist(),
            "host": tl.host_thread.tolist(),
        }
    }


def threads_from_dict(data: dict[str, Any], int_list: Any) -> dict[str, Any]:
    """The thread fields of a timeline file's ``threads`` key (optional); ``int_list`` reads
    a column as the timeline's loader does (naming the bad value's path)."""
    threads = data.get("threads")
    if threads is None:
        return {}
    if not isinstance(threads, dict):
        raise ValueError("threads: must be a JSON object")
    names = threads.get("names")
    if not isinstance(names, list):
        raise ValueError("threads.names: must be a JSON list")
    out: dict[str, Any] = {"thread_names": [str(x) for x in names]}
    for key, col in (("device", "thread_device"), ("host", "host_thread")):
        values = threads.get(key, [])
        if not isinstance(values, list):
            raise ValueError(f"threads.{key}: must be a JSON list")
        out[col] = int_list(f"threads.{key}", values, "device")
    return out


def empty_column() -> np.ndarray:
    return np.zeros(0, dtype=np.int16)
