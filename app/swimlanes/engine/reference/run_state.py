"""What a reference run keeps as it goes, apart from its clock and engines: each op's state,
Fermi's completion groups, the legacy default stream's state, and the host thread's markers.

Shared by the one-device simulation (``run.py``), the several-device one (``system.py``) and the
timeline columns (``columns.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from swimlanes.engine.reference.program import NO_CLASS, HostCall

HOST = -1  # the host thread, as a waiter on an op
NEVER = 1 << 62  # the host's time while it waits or once it is done
#: How late a blocking call returns after the work it waited for, per call (preset keys).
SYNC_RETURN_KEY = {
    HostCall.ENQUEUE_AND_WAIT: "sync_copy",
    HostCall.WAIT_STREAM: "stream_sync",
    HostCall.WAIT_EVENT: "event_sync",
    HostCall.WAIT_ALL: "device_sync",
}


class SyncScope(Protocol):
    """The legacy default stream's and the implicit synchronisations' state of one device."""

    last_default: int
    barrier_id: int
    barrier_ops: list[int]


@dataclass
class OpState:
    """What happened to one op; times in ns, -1: not (yet)."""

    issue_end: int = -1
    ready_at: int = -1  # when it may leave its queue as far as its own call goes
    deps: tuple[int, ...] = ()  # ops it waits for (first: its stream predecessor, if any)
    start: int = -1
    end: int = -1
    done: int = -1  # when its completion is visible to the ops and host calls that wait
    engine: int = -1
    engine_class: int = NO_CLASS  # event ops take the class of the op that released them
    waiters: list[int] = field(default_factory=list)  # queues (or HOST) to look at when done


@dataclass
class FermiGroup:
    """Kernels launched back to back on different streams: they signal completion together."""

    running: int = 0
    ended: list[int] = field(default_factory=list)
