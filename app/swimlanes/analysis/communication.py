"""Compute and communication per device: how much of the collectives' time the SMs hid.

A multi-device schedule's cost of communication is not the collectives' time but the part of it
during which the device had nothing else to do: :func:`communication_summary` measures, per
device, the kernels' busy time, the collectives' busy time, the part of the collectives that ran
while no kernel of that device did (exposed), and the NCCL calls with the per-call latency the
preset charges them. The DDP lessons quote these figures and the communication insights read
them. No Qt here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from swimlanes.model.document import COLLECTIVE_OPS, OP_KINDS
from swimlanes.timeline.metrics import interval_union, overlap_length, union_length
from swimlanes.timeline.timeline import NO_TIME, Timeline

_COLLECTIVE_KINDS = np.array([OP_KINDS.index(k) for k in COLLECTIVE_OPS], dtype=np.int8)
_SM_KINDS = np.array([OP_KINDS.index(k) for k in ("kernel", "memset", "d2d")], dtype=np.int8)


@dataclass(frozen=True)
class DeviceCommunication:
    """One device's compute and communication, in nanoseconds.

    ``compute_ns``: time its SMs ran a kernel, memset or D2D copy (a union);
    ``communication_ns``: time a collective of this device ran (a union); ``exposed_ns``: the
    part of ``communication_ns`` with no kernel running beside it; ``calls``: its collective
    ops; ``latency_ns``: ``calls`` times the preset's per-call latency (0 when unknown);
    ``compute_end`` / ``communication_end``: when its last kernel / last collective ended
    (0: none)."""

    device: str
    compute_ns: int
    communication_ns: int
    exposed_ns: int
    calls: int
    latency_ns: int
    compute_end: int
    communication_end: int
    rows: tuple[int, ...] = ()

    @property
    def overlapped_ns(self) -> int:
        """Collective time hidden behind this device's kernels."""
        return self.communication_ns - self.exposed_ns

    @property
    def tail_ns(self) -> int:
        """How long communication ran on after the device's last kernel (0: it ended first)."""
        return max(0, self.communication_end - self.compute_end) if self.calls else 0


def row_devices(tl: Timeline) -> np.ndarray:
    """Per row, the index (into ``tl.device_names``) of the device the op belongs to: the
    issuing host thread's device, which is its stream's device (all 0 for a single device)."""
    if tl.device_names and len(tl.host_device) == len(tl):
        return tl.host_device.astype(np.int64)
    return np.zeros(len(tl), dtype=np.int64)


def collective_rows(tl: Timeline) -> np.ndarray:
    """Rows of the timeline that are collectives and ran."""
    ran = (tl.start != NO_TIME) & (tl.end != NO_TIME)
    return np.flatnonzero(np.isin(tl.kind, _COLLECTIVE_KINDS) & ran)


def communication_summary(tl: Timeline, latency_us: float = 0.0) -> list[DeviceCommunication]:
    """Per device of ``tl`` (in ``device_names`` order; one entry for a single device), its
    compute and communication. ``latency_us`` is the per-call NCCL latency to charge each
    collective (the preset's ``nccl_latency_us``)."""
    names = tl.device_names or [tl.device or "gpu0"]
    dev = row_devices(tl)
    ran = (tl.start != NO_TIME) & (tl.end != NO_TIME)
    sm = np.isin(tl.kind, _SM_KINDS) & ran & (tl.engine >= 0)
    coll = np.isin(tl.kind, _COLLECTIVE_KINDS) & ran
    out = []
    for d, name in enumerate(names):
        k_mask, c_mask = sm & (dev == d), coll & (dev == d)
        kernels = interval_union(tl.start[k_mask], tl.end[k_mask])
        comms = (tl.start[c_mask], tl.end[c_mask])
        comm_ns = union_length(*comms)
        calls = int(c_mask.sum())
        out.append(
            DeviceCommunication(
                device=name,
                compute_ns=int((kernels[1] - kernels[0]).sum()),
                communication_ns=comm_ns,
                exposed_ns=comm_ns - overlap_length(kernels, comms),
                calls=calls,
                latency_ns=round(calls * latency_us * 1000),
                compute_end=int(tl.end[k_mask].max()) if k_mask.any() else 0,
                communication_end=int(tl.end[c_mask].max()) if calls else 0,
                rows=tuple(int(r) for r in np.flatnonzero(c_mask)),
            )
        )
    return out
