"""Which fields the inspector shows for each op kind (the inspector's per-kind table).

Registered with the op-kind registry as the "inspector" layer, so that a kind added to the
registry without a row here fails the coverage test instead of showing an empty form.
"""

from __future__ import annotations

from swimlanes.model.document import COLLECTIVE_OPS
from swimlanes.model.op_kinds import register_layer

_COPY = ("stream", "bytes", "time", "host_memory", "is_async")
_COLLECTIVE = ("stream", "communicator", "bytes", "time")

#: Op kind -> the inspector rows it shows besides its kind and label. A kernel's "time",
#: "flops" and "bytes" depend on its timing mode; "device" (the host thread that issues a
#: host-only op) shows only in a pipeline of several devices; "copy_out_us" only for pageable
#: memory. Every kind is a host call, so every kind shows its measured "call_us".
INSPECTOR_FIELDS: dict[str, tuple[str, ...]] = {
    "h2d": _COPY,
    "d2h": (*_COPY, "copy_out_us"),
    "d2d": ("stream", "bytes", "time", "is_async"),
    "memset": ("stream", "bytes", "time", "is_async"),
    "kernel": ("stream", "blocks", "threads", "timing", "time", "flops", "bytes"),
    "event_record": ("stream", "event"),
    "event_wait": ("stream", "event"),
    "event_sync": ("event", "device"),
    "stream_sync": ("stream",),
    "device_sync": ("device",),
    "host": ("time", "device"),
    "host_func": ("stream", "time"),
    "malloc": ("bytes", "device"),
    "free": ("device",),
    "peer_copy": ("stream", "src_device", "dst_device", "bytes", "time"),
    **{kind: _COLLECTIVE for kind in COLLECTIVE_OPS},
}
INSPECTOR_FIELDS["broadcast"] = (*_COLLECTIVE, "root")
INSPECTOR_FIELDS = {kind: (*rows, "call_us") for kind, rows in INSPECTOR_FIELDS.items()}

#: Kinds whose duration is an optional override of the device preset's model.
OPTIONAL_TIME = frozenset(
    k for k, rows in INSPECTOR_FIELDS.items() if "time" in rows and k not in ("kernel",)
) - {"host", "host_func"}

register_layer("inspector", INSPECTOR_FIELDS)


def visible_rows(
    kind: str,
    timing_mode: str,
    multi_device: bool,
    threads: bool = False,
    *,
    pageable: bool = False,
) -> set[str]:
    """The inspector rows shown for an op of ``kind`` (a kernel in ``timing_mode``); with
    ``threads`` (the pipeline declares host threads) every kind shows the thread that issues
    it. A D2H shows its copy-out only to ``pageable`` memory (a pinned copy has none)."""
    rows = set(INSPECTOR_FIELDS[kind])
    if not pageable:
        rows.discard("copy_out_us")
    if kind == "kernel":
        if timing_mode == "roofline":
            rows.discard("time")
        else:
            rows -= {"flops", "bytes"}
    if not multi_device:
        rows.discard("device")
    if threads:
        rows.add("host_thread")
    return rows
