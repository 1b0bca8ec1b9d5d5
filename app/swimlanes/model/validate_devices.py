"""Validation of a multi-device pipeline: devices, communicators, which device each stream
and op belongs to, and the collectives that must match across devices.

A file that declares no ``devices`` has one device, :data:`DEFAULT_DEVICE` (``"gpu0"``): a
``device`` key naming it is accepted there (and saved back as written), any other name is
refused as undeclared. Every check is linear in the size of the document.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from swimlanes.model.document import (
    COLLECTIVE_OPS,
    DEFAULT_DEVICE,
    DEFAULT_STREAM,
    MAX_COMMUNICATORS,
    MAX_DEVICES,
    PEER_COPY,
    Communicator,
    Device,
    Op,
    Pipeline,
)
from swimlanes.model.op_kinds import op_kind
from swimlanes.model.validate_checks import Checker, Problem, short
from swimlanes.model.validate_threads import ThreadScope

#: Op keys that name devices or a communicator, and who takes each (for the refusal).
DEVICE_KEYS: dict[str, str] = {
    "device": "host-only ops (host, event_sync, device_sync, malloc, free)",
    "src_device": "peer copies",
    "dst_device": "peer copies",
    "communicator": "collectives",
    "root": "broadcasts",
}


@dataclass
class Scope:
    """What an op may refer to: the devices (in order), each stream's device and the
    communicators, as the document declares them."""

    devices: list[str] = field(default_factory=lambda: [DEFAULT_DEVICE])
    stream_device: dict[str, str] = field(default_factory=dict)
    communicators: dict[str, list[str]] = field(default_factory=dict)
    threads: ThreadScope = field(default_factory=ThreadScope)

    @property
    def first_device(self) -> str:
        return self.devices[0]

    def device_of_stream(self, stream: str | None) -> str:
        """The device of ``stream`` (the legacy default's, the first device, for None)."""
        return self.stream_device.get(stream or DEFAULT_STREAM, self.first_device)


def _undeclared(c: Checker, path: str, name: str, scope_devices: list[str]) -> None:
    if scope_devices == [DEFAULT_DEVICE]:
        hint = f'a file without "devices" has one device, {DEFAULT_DEVICE!r}'
    else:
        hint = 'declare it in "devices"'
    c.add(path, f"names no declared device ({short(name)}): {hint}")


def device_name(
    c: Checker, raw: dict, key: str, path: str, devices: list[str], required: bool = False
) -> str | None:
    """``raw[key]`` when it names a declared device (else the problem is reported)."""
    name = c.string(raw, key, path, required=required)
    if name is not None and name not in devices:
        _undeclared(c, f"{path}.{key}", name, devices)
        return None
    return name


def parse_devices(c: Checker, data: dict) -> list[Device]:
    """The ``devices`` list of ``data`` (empty when absent: one device, ``gpu0``)."""
    if "devices" not in data:
        return []
    raw = data["devices"]
    if not isinstance(raw, list) or not raw:
        c.add("devices", 'must be a non-empty list of {"name": ...} objects (leave it out '
              f"for one device named {DEFAULT_DEVICE!r})")  # fmt: skip
        return []
    if len(raw) > MAX_DEVICES:
        c.add("devices", f"{len(raw)} devices: at most {MAX_DEVICES}")
        return []
    devices: list[Device] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        path = f"devices[{i}]"
        if not isinstance(item, dict):
            c.add(path, 'must be an object ({"name": ...})')
            continue
        name = c.string(item, "name", path, required=True)
        extra = {k: v for k, v in item.items() if k != "name"}
        if extra:
            c.json_values(extra, path)
        if name is None:
            continue
        if name in seen:
            c.add(f"{path}.name", f"duplicate device name {short(name)}")
            continue
        seen.add(name)
        devices.append(Device(name=name, extra=extra))
    return devices


def _communicator_devices(c: Checker, item: dict, path: str, devices: list[str]) -> list[str]:
    raw = item.get("devices")
    if not isinstance(raw, list) or not raw:
        c.add(f"{path}.devices", "is required (a non-empty list of device names)")
        return []
    members: list[str] = []
    for j, name in enumerate(raw):
        where = f"{path}.devices[{j}]"
        if not isinstance(name, str) or not name.strip():
            c.add(where, "must be a device name")
        elif name not in devices:
            _undeclared(c, where, name, devices)
        elif name in members:
            c.add(where, f"{short(name)} is already a member")
        else:
            members.append(name)
    return members


def parse_communicators(c: Checker, data: dict, devices: list[str]) -> list[Communicator]:
    """The ``communicators`` list of ``data``: unique names, members declared, each once."""
    if "communicators" not in data:
        return []
    raw = data["communicators"]
    if not isinstance(raw, list):
        c.add("communicators", 'must be a list of {"name": ..., "devices": [...]} objects')
        return []
    if len(raw) > MAX_COMMUNICATORS:
        c.add("communicators", f"{len(raw)} communicators: at most {MAX_COMMUNICATORS}")
        return []
    out: list[Communicator] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        path = f"communicators[{i}]"
        if not isinstance(item, dict):
            c.add(path, 'must be an object ({"name": ..., "devices": [...]})')
            continue
        before = len(c.problems)
        name = c.string(item, "name", path, required=True)
        members = _communicator_devices(c, item, path, devices)
        extra = {k: v for k, v in item.items() if k not in ("name", "devices")}
        if extra:
            c.json_values(extra, path)
        if name is not None and name in seen:
            c.add(f"{path}.name", f"duplicate communicator name {short(name)}")
        if name is None or len(c.problems) != before:
            continue
        seen.add(name)
        out.append(Communicator(name=name, devices=members, extra=extra))
    return out


def parse_op_device_keys(c: Checker, raw: dict, path: str, op: Op, scope: Scope) -> None:
    """Check and set the keys of ``raw`` that name devices and communicators (``device``,
    ``src_device``, ``dst_device``, ``communicator``, ``root``) on ``op``."""
    spec = op_kind(op.op)
    for key, takers in DEVICE_KEYS.items():
        if key in raw and key not in spec.fields:
            how = " (a stream op is issued by its stream's device)" if key == "device" else ""
            c.add(f"{path}.{key}", f"only {takers} take this{how}")
    if "device" in spec.fields:
        op.device = device_name(c, raw, "device", path, scope.devices)
    if op.op == PEER_COPY:
        _peer_copy(c, raw, path, op, scope)
    elif op.op in COLLECTIVE_OPS:
        _collective(c, raw, path, op, scope)


def _peer_copy(c: Checker, raw: dict, path: str, op: Op, scope: Scope) -> None:
    before = len(c.problems)
    op.src_device = device_name(c, raw, "src_device", path, scope.devices)
    op.dst_device = device_name(c, raw, "dst_device", path, scope.devices)
    if len(c.problems) != before or op.stream not in (None, *scope.stream_device):
        return
    own = scope.device_of_stream(op.stream)
    src, dst = op.src_device or own, op.dst_device or own
    if own not in (src, dst):
        stream = op.stream or DEFAULT_STREAM
        c.add(
            path,
            f"a peer copy from {src} to {dst} is enqueued on stream {short(stream)} of {own}: "
            "enqueue it on a stream of either end",
        )


def _collective(c: Checker, raw: dict, path: str, op: Op, scope: Scope) -> None:
    name = c.string(raw, "communicator", path, required=True)
    if name is None:
        return
    members = scope.communicators.get(name)
    if members is None:
        c.add(f"{path}.communicator", f"names no declared communicator ({short(name)})")
        return
    op.communicator = name
    if op.stream is None or op.stream in scope.stream_device:
        own = scope.device_of_stream(op.stream)
        if own not in members:
            c.add(
                path,
                f"its stream {short(op.stream or DEFAULT_STREAM)} is on {own}, which is not a "
                f"member of communicator {short(name)} ({', '.join(members)})",
            )
    if "root" in raw and op.op == "broadcast":
        root = c.string(raw, "root", path, required=False)
        if root is not None and root not in members:
            c.add(f"{path}.root", f"{short(root)} is not a member of communicator {short(name)}")
        else:
            op.root = root


def _signature(op: Op, members: list[str]) -> tuple[str, int | None, str | None]:
    root = (op.root or members[0]) if op.op == "broadcast" else None
    return op.op, op.bytes, root


def _describe(op: Op, members: list[str]) -> str:
    kind, nbytes, root = _signature(op, members)
    return f"{kind} of {nbytes} bytes" + (f" from {root}" if root else "")


def _calls_word(n: int) -> str:
    return "no calls" if n == 0 else f"only {n} call" + ("" if n == 1 else "s")


def check_collectives(c: Checker, pipeline: Pipeline) -> None:
    """Every member of each communicator must make the same sequence of collective calls on
    it, with the same kind, bytes and root: the k-th call of each member is one instance,
    and a call that some member never makes, or makes differently, hangs in NCCL."""
    if not pipeline.communicators:
        return
    first = pipeline.device_names[0]
    stream_device = {s.name: s.device or first for s in pipeline.streams}
    calls: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, op in enumerate(pipeline.program):
        if op.op in COLLECTIVE_OPS and op.communicator is not None:
            device = stream_device.get(op.stream or DEFAULT_STREAM, first)
            calls[(op.communicator, device)].append(i)
    for comm in pipeline.communicators:
        lists = [calls.get((comm.name, d), []) for d in comm.devices]
        if not any(lists):
            continue
        _check_instances(c, pipeline, comm, lists)


def collective_problems(pipeline: Pipeline) -> list[Problem]:
    """The collective calls of ``pipeline`` that some member of their communicator does not
    make, or makes differently (see :func:`check_collectives`)."""
    c = Checker()
    check_collectives(c, pipeline)
    return c.problems


def _check_instances(
    c: Checker, pipeline: Pipeline, comm: Communicator, lists: list[list[int]]
) -> None:
    members, program = comm.devices, pipeline.program
    fewest = min(range(len(lists)), key=lambda m: len(lists[m]))
    shared = len(lists[fewest])
    for k in range(shared):  # the first instance whose calls differ, if any
        first = lists[0][k]
        mismatch = next(
            (m for m in range(1, len(lists)) if
             _signature(program[lists[m][k]], members) != _signature(program[first], members)),
            None,
        )  # fmt: skip
        if mismatch is not None:
            index = lists[mismatch][k]
            c.add(
                f"program[{index}]",
                f"{_describe(program[index], members)} on communicator {short(comm.name)} is "
                f"call {k + 1} of {members[mismatch]}, but call {k + 1} of {members[0]} "
                f"(program[{first}]) is {_describe(program[first], members)}: every member "
                "must make the same calls (NCCL would hang)",
            )
            return
    for m, indices in enumerate(lists):
        if len(indices) > shared:
            index = indices[shared]
            c.add(
                f"program[{index}]",
                f"{program[index].op} on communicator {short(comm.name)} is call {shared + 1} "
                f"of {members[m]} but {members[fewest]} makes {_calls_word(shared)} on it "
                "(NCCL would hang)",
            )


def scope_of(devices: list[Device]) -> Scope:
    """A :class:`Scope` of ``devices`` (one, ``gpu0``, when none are declared), with the
    implicit legacy default stream on the first device; streams and communicators are added
    as they are parsed."""
    scope = Scope(devices=[d.name for d in devices] or [DEFAULT_DEVICE])
    scope.stream_device[DEFAULT_STREAM] = scope.first_device
    return scope


def stream_device(c: Checker, raw: dict, path: str, scope: Scope) -> tuple[bool, str | None]:
    """The ``device`` key of a stream: (whether it is valid, the name given or None)."""
    if "device" not in raw:
        return True, None
    name = device_name(c, raw, "device", path, scope.devices)
    return name is not None, name
