"""Random multi-device pipelines, for engine tests, property tests and the fidelity benchmark.

:func:`random_multi_device_pipeline` builds a valid pipeline over 2 to 8 devices, deterministic
in its seed: kernels, host copies, device copies and memsets on each device's streams, peer
copies between devices, NCCL collectives on a ``world`` communicator and on sub-communicators,
and events recorded on one device and waited for on another.

Every such pipeline runs to the end (no hang): each collective instance is issued by all its
members one after the other in the program, and an event wait waits for a record earlier in
the program, so every op waits only for ops before it (a collective instance counting as one).
"""

from __future__ import annotations

import random

from swimlanes.model.document import (
    COLLECTIVE_OPS,
    Communicator,
    Device,
    Op,
    Pipeline,
    Stream,
)

MIB = 1 << 20
#: Sizes of collectives and peer copies (gradient buckets and activations).
_SIZES = (256 * 1024, MIB, 8 * MIB, 25 * MIB, 64 * MIB)


def _devices(n: int) -> list[Device]:
    return [Device(f"gpu{d}") for d in range(n)]


def _streams(devices: list[str], per_device: int) -> dict[str, list[str]]:
    """Stream names per device: ``d<D>s<I>`` for work and ``d<D>comm`` for communication."""
    return {
        device: [f"d{d}s{i}" for i in range(per_device)] + [f"d{d}comm"]
        for d, device in enumerate(devices)
    }


def _communicators(devices: list[str]) -> list[Communicator]:
    """``world``, each neighbouring pair, and with four devices or more the even and odd
    halves."""
    comms = [Communicator("world", list(devices))]
    comms += [
        Communicator(f"pair{i}", [devices[i], devices[i + 1]]) for i in range(len(devices) - 1)
    ]
    if len(devices) >= 4:
        comms.append(Communicator("even", devices[0::2]))
        comms.append(Communicator("odd", devices[1::2]))
    return comms


class _Builder:
    """The program being built, with what later ops may refer to."""

    def __init__(self, rng: random.Random, streams: dict[str, list[str]]) -> None:
        self.rng = rng
        self.streams = streams
        self.devices = list(streams)
        self.program: list[Op] = []
        self.recorded: list[str] = []

    def stream_of(self, device: str) -> str:
        return self.rng.choice(self.streams[device])

    def local_op(self, device: str) -> None:
        rng, s, i = self.rng, self.stream_of(device), len(self.program)
        roll = rng.random()
        if roll < 0.55:
            op = Op("kernel", stream=s, label=f"k{i}", blocks=rng.choice((32, 264, 2048)))
            op.threads = rng.choice((128, 256))
            op.duration_us = rng.choice((5.0, 50.0, 500.0))
        elif roll < 0.8:
            kind = rng.choice(("h2d", "d2h"))
            op = Op(kind, stream=s, label=f"{kind} {i}", bytes=rng.choice(_SIZES[:3]))
            op.host_memory = "pinned" if rng.random() < 0.9 else "pageable"
        else:
            kind = rng.choice(("d2d", "memset"))
            op = Op(kind, stream=s, label=f"{kind} {i}", bytes=rng.choice(_SIZES[:3]))
        self.program.append(op)

    def peer_copy(self) -> None:
        rng = self.rng
        src = rng.choice(self.devices)
        dst = src if rng.random() < 0.1 else rng.choice([d for d in self.devices if d != src])
        stream = self.stream_of(rng.choice((src, dst)))
        self.program.append(
            Op("peer_copy", stream=stream, label=f"{src}->{dst} {len(self.program)}",
               bytes=rng.choice(_SIZES), src_device=src, dst_device=dst)
        )  # fmt: skip

    def collective(self, comm: Communicator) -> None:
        """One instance: the same call by every member, one after the other."""
        rng = self.rng
        kind = rng.choice(COLLECTIVE_OPS)
        nbytes = rng.choice(_SIZES)
        root = rng.choice(comm.devices) if kind == "broadcast" and rng.random() < 0.5 else None
        on_comm_stream = rng.random() < 0.7
        label = f"{kind} {comm.name} {len(self.program)}"
        for device in comm.devices:
            d = self.devices.index(device)
            stream = f"d{d}comm" if on_comm_stream else self.stream_of(device)
            self.program.append(
                Op(kind, stream=stream, label=label, bytes=nbytes, communicator=comm.name,
                   root=root)
            )  # fmt: skip

    def event(self) -> None:
        rng = self.rng
        stream = self.stream_of(rng.choice(self.devices))
        if self.recorded and rng.random() < 0.5:
            self.program.append(Op("event_wait", stream=stream, event=rng.choice(self.recorded)))
            return
        event = f"e{len(self.recorded) % 64}"
        self.recorded.append(event)
        self.program.append(Op("event_record", stream=stream, event=event))

    def host_op(self) -> None:
        rng = self.rng
        device = rng.choice(self.devices)
        roll = rng.random()
        if roll < 0.4:
            self.program.append(Op("host", duration_us=rng.choice((1.0, 20.0)), device=device))
        elif roll < 0.7:
            self.program.append(Op("stream_sync", stream=self.stream_of(device)))
        elif roll < 0.85 or not self.recorded:
            self.program.append(Op("device_sync", device=device))
        else:
            self.program.append(Op("event_sync", event=rng.choice(self.recorded), device=device))


def random_multi_device_pipeline(
    n_ops: int, n_devices: int | None = None, streams_per_device: int = 2, seed: int = 0
) -> Pipeline:
    """A valid pipeline of about ``n_ops`` ops over ``n_devices`` devices (2 to 8; drawn from
    the seed when None), each with ``streams_per_device`` work streams and one communication
    stream (priority -1), deterministic in ``seed``. About 45% local work, 15% peer copies,
    15% collectives (half on ``world``), 15% event records and waits across devices, and a
    few host-only ops and syncs on each device's host thread."""
    rng = random.Random(seed)
    n = n_devices if n_devices is not None else rng.randint(2, 8)
    if not 1 <= n <= 64:
        raise ValueError(f"n_devices must be from 1 to 64 (got {n})")
    devices = _devices(n)
    names = [d.name for d in devices]
    per_device = _streams(names, streams_per_device)
    streams = [
        Stream(name, "non_blocking" if name.endswith("comm") or i % 2 else "blocking",
               -1 if name.endswith("comm") else 0, device=device)
        for device, device_streams in per_device.items()
        for i, name in enumerate(device_streams)
    ]  # fmt: skip
    comms = _communicators(names)
    b = _Builder(rng, per_device)
    while len(b.program) < n_ops:
        roll = rng.random()
        if roll < 0.45:
            b.local_op(rng.choice(names))
        elif roll < 0.6:
            b.peer_copy()
        elif roll < 0.75:
            b.collective(comms[0] if rng.random() < 0.5 or len(comms) == 1 else rng.choice(comms))
        elif roll < 0.9:
            b.event()
        else:
            b.host_op()
    name = f"random {n_ops} ops / {n} devices (seed {seed})"
    return Pipeline(name, streams, b.program, devices=devices, communicators=comms)
