"""Validation of a program's host threads: the ``host_threads`` list, the ``host_thread`` key
of streams and ops, and the CUDA rules that tie them together.

A file without ``host_threads`` has one host thread per device, named after the device (so
every existing file stays valid unchanged). With them:

- each thread belongs to one device (``device``; default the first), and its name is unique
  and no device's name (a device without declared threads keeps its implicit thread, named
  after it);
- a stream's ``host_thread`` must be a thread of the stream's device; a ``per_thread_default``
  stream belongs to one thread (``cudaStreamPerThread`` is the calling thread's own), at most
  one per thread; the legacy default stream is every thread's and names none;
- an op's ``host_thread`` must be a thread of the device it issues on (its stream's, or its
  ``device`` for host-only ops), and only a per-thread default stream's own thread may issue on
  it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from swimlanes.model.document import DEFAULT_STREAM, MAX_HOST_THREADS, HostThread, Op
from swimlanes.model.validate_checks import Checker, short

if TYPE_CHECKING:
    from swimlanes.model.validate_devices import Scope

PER_THREAD = "per_thread_default"


@dataclass
class ThreadScope:
    """The declared host threads (name -> device) and each per-thread default stream's
    thread, as the document declares them."""

    declared: bool = False
    threads: dict[str, str] = field(default_factory=dict)
    per_thread_owner: dict[str, str] = field(default_factory=dict)  # stream -> its thread
    owned: dict[str, str] = field(default_factory=dict)  # thread -> its per-thread stream

    def first_of(self, device: str) -> str:
        """The thread a device's ops default to: its first declared one, or its own."""
        return next((t for t, d in self.threads.items() if d == device), device)


def parse_host_threads(c: Checker, data: dict, scope: Scope) -> None:
    """Check the ``host_threads`` list of ``data``; the valid ones go to ``scope.threads``."""
    ts = scope.threads
    if "host_threads" not in data:
        return
    raw = data["host_threads"]
    ts.declared = True
    if not isinstance(raw, list) or not raw:
        c.add("host_threads", 'must be a non-empty list of {"name": ..., "device": ...} '
              "objects (leave it out for one host thread per device)")  # fmt: skip
        return
    if len(raw) > MAX_HOST_THREADS:
        c.add("host_threads", f"{len(raw)} host threads: at most {MAX_HOST_THREADS}")
        return
    for i, item in enumerate(raw):
        path = f"host_threads[{i}]"
        if not isinstance(item, dict):
            c.add(path, 'must be an object ({"name": ..., "device": ...})')
            continue
        name = c.string(item, "name", path, required=True)
        device = c.string(item, "device", path, required=False)
        extra = {k: v for k, v in item.items() if k not in ("name", "device")}
        if extra:
            c.json_values(extra, path)
        if device is not None and device not in scope.devices:
            c.add(f"{path}.device", f"names no declared device ({short(device)})")
            continue
        if name is None:
            continue
        if name in ts.threads:
            c.add(f"{path}.name", f"duplicate host thread name {short(name)}")
        elif name in scope.devices:
            c.add(f"{path}.name", f"{short(name)} is a device's name: name the thread otherwise")
        else:
            ts.threads[name] = device or scope.first_device


def host_threads_of(data: dict, scope: Scope) -> list[HostThread]:
    """The declared host threads as model objects (after :func:`parse_host_threads`)."""
    raw = data.get("host_threads")
    if not isinstance(raw, list):
        return []
    out = []
    for item in raw:
        if isinstance(item, dict) and item.get("name") in scope.threads.threads:
            extra = {k: v for k, v in item.items() if k not in ("name", "device")}
            out.append(HostThread(item["name"], item.get("device"), extra))
    return out


def stream_host_thread(
    c: Checker, raw: dict, path: str, scope: Scope, kind: str | None, device: str | None
) -> tuple[bool, str | None]:
    """The ``host_thread`` key of a stream: (whether it is valid, the name given or None)."""
    if "host_thread" not in raw:
        return True, None
    name = c.string(raw, "host_thread", path, required=False)
    if name is None:
        return False, None
    where = f"{path}.host_thread"
    if kind == "legacy_default" or raw.get("name") == DEFAULT_STREAM:
        c.add(where, "the legacy default stream is shared by every thread of its device")
        return False, None
    return _thread_on(c, where, name, scope, device or scope.first_device), name


def _thread_on(c: Checker, where: str, name: str, scope: Scope, device: str) -> bool:
    threads = scope.threads.threads
    if name in threads:
        own = threads[name]
    elif name in scope.devices and scope.threads.first_of(name) == name:
        own = name  # a device's implicit thread, named after it
    else:
        c.add(where, f"names no declared host thread ({short(name)}): declare it in "
              '"host_threads"')  # fmt: skip
        return False
    if own != device:
        c.add(where, f"host thread {short(name)} runs on {own}, not on {device}")
        return False
    return True


def register_stream_thread(
    c: Checker, path: str, name: str, kind: str, device: str, thread: str | None, scope: Scope
) -> None:
    """Note a valid stream's thread: a per-thread default stream is its thread's own, and
    (where threads are declared) a thread has at most one."""
    if kind != PER_THREAD:
        return
    ts = scope.threads
    owner = thread or ts.first_of(device)
    ts.per_thread_owner[name] = owner
    if ts.declared and owner in ts.owned:
        c.add(
            f"{path}.host_thread",
            f"host thread {short(owner)} already has a per-thread default stream "
            f"({short(ts.owned[owner])}): each thread has one",
        )
    ts.owned.setdefault(owner, name)


def parse_op_thread(c: Checker, raw: dict, path: str, op: Op, scope: Scope) -> None:
    """Check and set an op's ``host_thread`` key."""
    if "host_thread" not in raw:
        return
    name = c.string(raw, "host_thread", path, required=False)
    if name is None:
        return
    where = f"{path}.host_thread"
    if op.stream is not None or _on_stream(op):
        stream = op.stream or DEFAULT_STREAM
        if stream not in scope.stream_device:
            return  # the undeclared stream is the problem already reported
        device = scope.device_of_stream(stream)
    else:
        device = op.device or scope.threads.threads.get(name, scope.first_device)
    if _thread_on(c, where, name, scope, device):
        op.host_thread = name
        _check_owner(c, path, op, scope, name)


def _on_stream(op: Op) -> bool:
    return op.stream_name is not None


def _check_owner(c: Checker, path: str, op: Op, scope: Scope, thread: str) -> None:
    """Only a per-thread default stream's own thread issues on it."""
    stream = op.stream
    owner = scope.threads.per_thread_owner.get(stream) if stream is not None else None
    if owner is None or thread == owner:
        return
    c.add(
        f"{path}.host_thread",
        f"stream {short(stream)} is host thread {short(owner)}'s per-thread default stream: "
        f"{short(thread)} cannot issue on it (each thread's cudaStreamPerThread is its own)",
    )
