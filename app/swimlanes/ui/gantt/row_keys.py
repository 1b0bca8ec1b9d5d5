"""Row keys of a Gantt chart (no Qt): what each row of the chart stands for.

A single-device chart has "host", "stream:NAME", "engine:NAME" and "compute" rows. A chart of
a multi-device timeline has one host row and one SM-occupancy row per device
("host:gpu0", "compute:gpu0"), its engines are named after their device ("engine:gpu0 H2D"),
and it has one row per link between devices ("link:NVLink gpu0→gpu1"). A program with several
host threads has one host row per thread ("host:gpu0#thread:worker"), in its device's rows.
"""

from __future__ import annotations

HOST_ROW = "host"
COMPUTE_ROW = "compute"
LINK_PREFIX = "link:"
THREAD_MARK = "#thread:"


def stream_row(name: str) -> str:
    """The row key of a stream."""
    return f"stream:{name}"


def engine_row(name: str) -> str:
    """The row key of an engine."""
    return f"engine:{name}"


def host_row(device: str | None = None) -> str:
    """The row key of a host thread: "host", or the host thread of ``device``."""
    return HOST_ROW if device is None else f"{HOST_ROW}:{device}"


def thread_row(device: str, thread: str) -> str:
    """The row key of host thread ``thread`` of ``device`` (a device's own thread, named after
    it, keeps the device's host row)."""
    return host_row(device) if thread == device else f"{host_row(device)}{THREAD_MARK}{thread}"


def row_thread(key: str) -> str | None:
    """The thread named in a thread's host row ("host:gpu0#thread:worker" -> "worker")."""
    if is_host_row(key) and THREAD_MARK in key:
        return key.rpartition(THREAD_MARK)[2]
    return None


def compute_row(device: str | None = None) -> str:
    """The row key of SM occupancy: "compute", or that of ``device``'s SMs."""
    return COMPUTE_ROW if device is None else f"{COMPUTE_ROW}:{device}"


def link_row(name: str) -> str:
    """The row key of a link between two devices (NVLink or PCIe, one direction)."""
    return LINK_PREFIX + name


def is_host_row(key: str) -> bool:
    return key == HOST_ROW or key.startswith(HOST_ROW + ":")


def is_compute_row(key: str) -> bool:
    return key == COMPUTE_ROW or key.startswith(COMPUTE_ROW + ":")


def is_link_row(key: str) -> bool:
    return key.startswith(LINK_PREFIX)


def row_device(key: str) -> str | None:
    """The device named in a host or compute row's key ("host:gpu1" -> "gpu1"), else None."""
    if is_host_row(key) or is_compute_row(key):
        _, _, device = key.partition(":")
        if THREAD_MARK in device:
            device = device.rpartition(THREAD_MARK)[0]
        return device or None
    return None
