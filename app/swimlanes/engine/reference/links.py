"""Peer copies between devices: the copy engine at each end, and the links between devices.

A peer copy that left its hardware queue waits until its source's outgoing (D2H) copy engine
and its destination's incoming (H2D) copy engine are both idle and rested; it then holds both
for its whole span (their other copies wait), starts, and after the link's latency its bytes
flow over the link from source to destination. Each ordered pair of devices has a link of its
own (NVSwitch gives every pair the full per-pair rate; PCIe is taken the same way); the
copies on one link share its bandwidth fluidly, as copies of one direction share a PCIe link
(``devices.CopyEngines``): while k copies flow each takes k times as long, and speeds are
recomputed whenever one joins or leaves. Copies on different links do not slow each other.
Peer copies are offered the engines before the devices' own copies at each instant, those
that became ready first (then in program order) first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swimlanes.engine.presets import DevicePreset
from swimlanes.engine.reference.devices import (
    D2H,
    H2D,
    Clock,
    CopyEngine,
    CopyEngines,
)


@dataclass(eq=False)
class PeerFlow:
    """One peer copy on its link."""

    op: int
    src: int
    dst: int
    stream: int
    engines: tuple[CopyEngine, CopyEngine]  # the source's D2H engine, the destination's H2D
    remaining: float  # ns of its bytes left at the link's full rate
    since: int = 0
    factor: float = 0.0  # how many times slower than alone it flows now (0: not yet)
    version: int = 0


@dataclass
class LinkJoin:
    """A peer copy's latency has passed: its bytes start to flow over the link."""

    flow: PeerFlow


@dataclass
class PeerEnd:
    """A peer copy may end now: valid only if its speed has not changed since."""

    flow: PeerFlow
    version: int


@dataclass
class PeerWake:
    """A copy engine that a ready peer copy waits for has rested."""


@dataclass
class ReadyPeer:
    ready_time: int
    op: int
    src: int
    dst: int
    stream: int
    latency_ns: int
    work_ns: int  # its bytes' time alone on the link


class HeldCopyEngines(CopyEngines):
    """A device's copy engines, of which a peer copy may hold some (they take no copy then)."""

    def __init__(self, preset: DevicePreset, clock: Clock) -> None:
        super().__init__(preset, clock)
        self.held: set[int] = set()

    def free_engine(self, direction: int, t: int) -> tuple[CopyEngine | None, int]:
        """An idle, rested engine that serves ``direction`` (None if none), and when the
        first of those idle but resting will have rested (-1: none rests)."""
        pool = 0 if self.shared else direction
        rested = -1
        for e in self.engines:
            if e.pool != pool or e.op >= 0 or e.index in self.held:
                continue
            if e.free_at <= t:
                return e, -1
            rested = e.free_at if rested < 0 else min(rested, e.free_at)
        return None, rested

    def hold(self, e: CopyEngine) -> None:
        self.held.add(e.index)

    def release(self, e: CopyEngine, t: int, stream: int) -> None:
        """The peer copy that held ``e`` ended at ``t``: the engine rests as after a copy, and
        remembers the peer copy's ``stream`` as its last copy key."""
        self.held.discard(e.index)
        e.free_at = t + self.rest[e.direction][False]
        e.last_copy_key = stream

    def held_elsewhere(self, e: CopyEngine) -> bool:
        """A peer copy holds ``e``: it takes no copy of its own pool meanwhile."""
        return e.index in self.held


class Links:
    """The links between devices and the peer copies waiting for or flowing over them."""

    def __init__(self, preset: DevicePreset, clock: Clock, device_names: list[str]) -> None:
        self.kind = "PCIe" if preset.link == "pcie" else "NVLink"
        self.device_names = device_names
        self.gbps = preset.link_gbps
        self.clock = clock
        self.ready: list[ReadyPeer] = []
        self.flows: dict[tuple[int, int], list[PeerFlow]] = {}
        self.wake_at: set[int] = set()

    def name(self, src: int, dst: int) -> str:
        """``NVLink gpu0→gpu1``: the link from ``src`` to ``dst``."""
        return f"{self.kind} {self.device_names[src]}→{self.device_names[dst]}"

    def dispatch(self, t: int, copies: list[HeldCopyEngines]) -> list[PeerFlow]:
        """Start every ready peer copy whose two engines are free; returns those started."""
        started = []
        for peer in sorted(self.ready, key=lambda p: (p.ready_time, p.op)):
            out, out_rest = copies[peer.src].free_engine(D2H, t)
            into, in_rest = copies[peer.dst].free_engine(H2D, t)
            if out is None or into is None:
                for rest in (out_rest, in_rest):
                    if rest > t and rest not in self.wake_at:
                        self.wake_at.add(rest)
                        self.clock.at(rest, PeerWake())
                continue
            copies[peer.src].hold(out)
            copies[peer.dst].hold(into)
            self.ready.remove(peer)
            flow = PeerFlow(peer.op, peer.src, peer.dst, peer.stream, (out, into),
                            float(peer.work_ns))  # fmt: skip
            if peer.latency_ns:
                self.clock.at(t + peer.latency_ns, LinkJoin(flow))
            else:
                self.join(flow, t)
            started.append(flow)
        return started

    def join(self, flow: PeerFlow, t: int) -> None:
        self.flows.setdefault((flow.src, flow.dst), []).append(flow)
        self.update(flow.src, flow.dst, t)

    def finish(self, flow: PeerFlow, t: int) -> None:
        self.flows[(flow.src, flow.dst)].remove(flow)
        self.update(flow.src, flow.dst, t)

    def update(self, src: int, dst: int, t: int) -> None:
        """Give every copy on the link the speed of the copies flowing now; a copy whose
        speed changed gets a new end on the clock (its old one goes stale)."""
        flows = self.flows[(src, dst)]
        factor = float(len(flows))
        for f in flows:
            if f.factor == factor:
                continue
            if f.factor:
                f.remaining -= (t - f.since) / f.factor
            f.since, f.factor = t, factor
            f.version += 1
            self.clock.at(t + max(0, round(f.remaining * factor)), PeerEnd(f, f.version))


@dataclass
class LinkUse:
    """Which ops used which links (the timeline's link columns), in order of first use."""

    names: list[str] = field(default_factory=list)
    ops: list[int] = field(default_factory=list)
    links: list[int] = field(default_factory=list)

    def add(self, op: int, name: str) -> None:
        if name not in self.names:
            self.names.append(name)
        self.ops.append(op)
        self.links.append(self.names.index(name))
