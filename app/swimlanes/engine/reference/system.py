"""The reference simulation of several devices: the single-device rules (``run.py``) per
device, with one clock, global events, peer copies and collectives.

Each device has its own copy engines, block scheduler, hardware queues, legacy default stream
and implicit synchronisations, and its own host threads (one, unless the program declares
several: ``threads.py``), each of which issues its own ops in program order; all host threads
start at t = 0 and run concurrently (host calls due at one instant: the first thread's first,
threads numbered device by device). A thread's synchronisation blocks only that thread; what it
waits for is its device's (``device_sync`` waits for every stream of the device, whichever
thread issued their work). Ops, streams, queues and engines are numbered across the
whole program, so that an event wait (or event sync) on one device may wait for a record on
another. Peer copies are ``links.py``'s, collectives ``collectives.py``'s.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from swimlanes.engine.errors import SimulationCancelled
from swimlanes.engine.presets import DevicePreset
from swimlanes.engine.reference.collectives import (
    CollectiveEnd,
    Collectives,
    Instance,
    hold_channels,
    release_channels,
)
from swimlanes.engine.reference.devices import (
    D2H,
    H2D,
    BatchEnd,
    CallbackEnd,
    Clock,
    CopyEnd,
    CopyEngine,
    CopyRestOver,
    QueueTimer,
    ReadyCopy,
    Sms,
    SmWork,
)
from swimlanes.engine.reference.layout import DeviceLayout, Layout, MultiDeviceError
from swimlanes.engine.reference.links import (
    HeldCopyEngines,
    LinkJoin,
    Links,
    LinkUse,
    PeerEnd,
    PeerWake,
    ReadyPeer,
)
from swimlanes.engine.reference.program import (
    Engine,
    HostCall,
    OpFacts,
    event_records,
    latency_table,
    next_in_stream,
)
from swimlanes.engine.reference.run import Simulation
from swimlanes.engine.reference.run_state import (
    HOST,
    NEVER,
    SYNC_RETURN_KEY,
    FermiGroup,
    OpState,
)
from swimlanes.engine.reference.threads import ThreadLayout, device_threads

#: How often (in host calls and device events) the progress and cancel callbacks are called.
CALLBACK_EVERY = 4096


@dataclass(eq=False)
class Device:
    """One device's engines and implicit-synchronisation state."""

    layout: DeviceLayout
    copies: HeldCopyEngines
    sms: Sms
    engine_base: int  # the global number of its first copy engine
    compute_engine: int
    last_default: int = -1
    barrier_id: int = 0
    barrier_ops: list[int] = field(default_factory=list)
    last_kernel: tuple[int, int, FermiGroup] = (-2, -1, FermiGroup())
    new_work: bool = False


@dataclass(eq=False)
class Thread:
    """One host thread: the ops it issues, in order, and where it is in them."""

    layout: ThreadLayout
    device: Device
    host_pos: int = 0  # its next call, an index into layout.ops
    host_t: int = NEVER  # when that call takes effect
    host_wait: list[int] = field(default_factory=list)

    @property
    def host(self) -> int:
        """The thread as a waiter on an op (``HOST`` for the first thread)."""
        return HOST - self.layout.index


class System(Simulation):
    """One run of a multi-device program (see the module docstring)."""

    def __init__(
        self,
        layout: Layout,
        preset: DevicePreset,
        by_op: dict[int, Instance],
        fast_engine_ties: bool = True,
        progress: Callable[[float], None] | None = None,
        cancel: Callable[[], bool] | None = None,
        threads: list[ThreadLayout] | None = None,
    ) -> None:
        # (Simulation.__init__ builds one device; the shared parts are set up here instead.)
        ops = layout.ops
        self.ops, self.streams, self.preset, self.layout = ops, layout.streams, preset, layout
        self.fast_engine_ties = fast_engine_ties
        self.state = [OpState(engine_class=op.engine_class) for op in ops]
        self.edges: list[tuple[int, int, str]] = []
        self.clock = Clock()
        self.queues: list[deque[int]] = [deque() for _ in range(layout.queue_count)]
        self.to_examine: deque[int] = deque()
        self.arrivals = 0
        self.latency = latency_table(preset)
        self.callback_wake: dict[int, int] = {}  # per device (callback_thread)
        n_streams = len(self.streams)
        self.tail = [-1] * n_streams
        self.covered = [-1] * n_streams
        self.seen_default = [-1] * n_streams
        self.seen_barrier = [0] * n_streams
        self.record_of = event_records(ops)
        self.next_in_stream = next_in_stream(ops)
        self.queue_last = [(-1, -1, -1)] * layout.queue_count
        self.shared_queues = any(d.shared_queues for d in layout.devices)
        self.queue_turn: dict[int, int] = {}  # (Simulation.hardware_queue)
        self.fermi_groups: dict[int, FermiGroup] = {}
        self.engine_owner: dict[int, Device] = {}  # id of a copy engine -> its device
        self.devices = self._devices(layout)
        self.threads = self._threads(threads or device_threads(layout), preset)
        # Each op's place in its host thread's calls (Fermi groups: "the call before it").
        self.call_pos = {i: k for th in self.threads for k, i in enumerate(th.layout.ops)}
        self.thread_of = {i: th for th in self.threads for i in th.layout.ops}
        self.links = Links(preset, self.clock, [d.name for d in layout.devices])
        self.link_use = LinkUse()
        self.collectives = Collectives(by_op, self.clock)
        self.progress, self.cancel, self.steps = progress, cancel, 0

    def _devices(self, layout: Layout) -> list[Device]:
        out, base = [], 0
        preset = self.preset
        for dev in layout.devices:
            copies = HeldCopyEngines(preset, self.clock)
            device = Device(dev, copies, Sms(preset, self.clock), base, base + len(copies.names))
            self.engine_owner.update((id(e), device) for e in copies.engines)
            base += len(copies.names) + 1
            out.append(device)
        return out

    def _threads(self, layouts: list[ThreadLayout], preset: DevicePreset) -> list[Thread]:
        gap = round(preset.host_call_gap_us * 1000.0)
        out = []
        for th in layouts:
            thread = Thread(th, self.devices[th.device])
            if th.ops:
                thread.host_t = self.ops[th.ops[0]].cost_ns - gap
            out.append(thread)
        return out

    def callback_thread(self, i: int) -> int:
        """Each device's driver has a callback thread of its own."""
        return int(self.layout.stream_device[self.ops[i].stream])

    def device_of(self, i: int) -> Device:
        """The device whose engines run op ``i`` (its stream's)."""
        return self.devices[self.layout.stream_device[self.ops[i].stream]]

    # -- the event loop ------------------------------------------------------------------------
    def run(self) -> None:
        """As Simulation.run, with several host threads; raises MultiDeviceError if ops are
        left waiting for each other when nothing else can happen."""
        self._draw_event_edges()
        while True:
            host = min(self.threads, key=lambda th: th.host_t)
            next_event = self.clock.next_time()
            if next_event is None or host.host_t <= next_event:
                if host.host_t >= NEVER:
                    break
                t = host.host_t
                self.host_call(host, t)
            else:
                t, event = self.clock.pop()
                self.handle(event, t)
            self.examine_all(t)
            next_event = self.clock.next_time()
            if (next_event is None or next_event > t) and all(th.host_t > t for th in self.threads):
                self.dispatch(t)
            self._tick()
        self._check_finished()

    def _tick(self) -> None:
        self.steps += 1
        if self.steps % CALLBACK_EVERY:
            return
        if self.cancel is not None and self.cancel():
            raise SimulationCancelled()
        if self.progress is not None:
            done = sum(th.host_pos for th in self.threads)
            self.progress(min(0.99, done / max(1, len(self.ops))))

    def dispatch(self, t: int) -> None:
        """The end of an instant: peer copies take their engines, then every device's idle
        engines take their next work."""
        started: list[int] = []
        if self.links.ready:
            copies = [d.copies for d in self.devices]
            for flow in self.links.dispatch(t, copies):
                started.append(flow.op)
                # Its engine in the timeline: the source's outgoing engine that it holds.
                src_engine = flow.engines[0].index
                self.state[flow.op].engine = self.devices[flow.src].engine_base + src_engine
                self.link_use.add(flow.op, self.links.name(flow.src, flow.dst))
        for d in self.devices:
            if not d.new_work:
                continue
            d.new_work = False
            if d.copies.has_ready():
                d.copies.dispatch(t, started)
            d.sms.dispatch(t, started)
        for op in started:
            self.state[op].start = t

    def handle(self, event: object, t: int) -> None:
        if isinstance(event, QueueTimer):
            self.examine(event.queue, t)
        elif isinstance(event, CopyEnd):
            if event.version == event.engine.version:
                d = self._device_of_engine(event.engine)
                op = d.copies.finish(event.engine, t)
                self.state[op].engine = d.engine_base + event.engine.index
                self.complete(op, t)
                d.new_work = True
        elif isinstance(event, CopyRestOver):
            self._device_of_engine(event.engine).new_work = True
        elif isinstance(event, BatchEnd):
            d = self.device_of(event.work.op)
            d.new_work = True
            if d.sms.batch_end(event.work, event.blocks, t):
                self.complete(event.work.op, t)
        elif isinstance(event, CallbackEnd):
            self.complete(event.op, t)
        else:
            self.handle_multi(event, t)

    def handle_multi(self, event: object, t: int) -> None:
        """Peer copies' and collectives' events."""
        if isinstance(event, LinkJoin):
            self.links.join(event.flow, t)
        elif isinstance(event, PeerEnd):
            flow = event.flow
            if event.version != flow.version:
                return  # its speed changed since
            self.links.finish(flow, t)
            for d, e in zip((flow.src, flow.dst), flow.engines, strict=True):
                self.devices[d].copies.release(e, t, flow.stream)
                self.devices[d].new_work = True
            self.complete(flow.op, t)
        elif isinstance(event, PeerWake):
            self.links.wake_at.discard(t)
        elif isinstance(event, CollectiveEnd):
            instance = event.instance
            for i, work in zip(instance.ops, instance.works, strict=True):
                device = self.device_of(i)
                release_channels(device.sms, work)
                device.new_work = True
                self.complete(i, t)

    def _device_of_engine(self, engine: CopyEngine) -> Device:
        return self.engine_owner[id(engine)]

    def _check_finished(self) -> None:
        """Every op ran, or name the first that never did (collectives or events that wait for
        each other across devices)."""
        stuck = next((i for i, s in enumerate(self.state) if s.issue_end < 0 or (
            self.ops[i].engine is not None and s.end < 0)), None)  # fmt: skip
        if stuck is None:
            return
        op = self.ops[stuck]
        name = self.layout.devices[self.layout.op_device[stuck]].name
        raise MultiDeviceError(
            f"program[{stuck}] ({op.kind} on {name}) never runs: its devices wait for each "
            "other (collectives issued in a different order on different devices, or a wait "
            "for something that waits for it)"
        )

    # -- rule 1: the host threads ----------------------------------------------------------------
    def host_call(self, th: Thread, t: int) -> None:  # type: ignore[override]
        """The call of thread ``th``'s next op takes effect at ``t``."""
        d = th.device
        i = th.layout.ops[th.host_pos]
        op, state = self.ops[i], self.state[i]
        call, busy, wait = op.call, 0, []
        if op.engine is not None:
            if call is HostCall.ENQUEUE_BARRIER:
                self.implicit_sync(d)
            self.enqueue(i, t)
            if call is HostCall.ENQUEUE_AND_WAIT:
                wait = [i]
            elif call is HostCall.ENQUEUE_AND_STAGE:
                busy = op.stage_ns or 0
                chunk = self.preset.pageable_h2d_chunk_bytes
                if chunk:
                    first = busy if op.nbytes <= chunk else busy * chunk // op.nbytes
                    state.ready_at += first
            elif call is HostCall.ENQUEUE_BARRIER:
                d.barrier_ops = [i]
                d.barrier_id += 1
        elif call is HostCall.WAIT_STREAM:
            last = self.tail[op.stream] if op.stream >= 0 else -1
            wait = [last] if last >= 0 else []
        elif call is HostCall.WAIT_EVENT:
            record = self.record_of.get(i, -1)
            wait = [record] if record >= 0 else []
        elif call is HostCall.WAIT_ALL:
            wait = [x for x in (self.tail[s] for s in d.layout.streams) if x >= 0]
        elif call is HostCall.BUSY:
            busy = op.solo_ns
        elif call is HostCall.BARRIER:
            self.implicit_sync(d)
        if wait:
            th.host_wait = wait
            th.host_t = NEVER
            self.check_host(th, t)
        else:
            self.host_return(th, t + busy, -1)

    def check_host(self, th: Thread, t: int) -> None:  # type: ignore[override]
        for x in th.host_wait:
            if self.state[x].done < 0:
                self.state[x].waiters.append(th.host)
                return
        last = max(th.host_wait, key=lambda x: self.state[x].done)
        th.host_wait = []
        op = self.ops[th.layout.ops[th.host_pos]]
        lag = self.preset.sync_return_ns(SYNC_RETURN_KEY[op.call])
        if op.call is HostCall.ENQUEUE_AND_WAIT and op.stage_ns is not None:
            lag += op.stage_ns
        self.host_return(th, max(t, self.state[last].done + lag) if lag else t, last)

    def host_return(self, th: Thread, t: int, released_by: int) -> None:  # type: ignore[override]
        i = th.layout.ops[th.host_pos]
        self.state[i].issue_end = t
        if released_by >= 0 and released_by != i:
            self.edges.append((released_by, i, "host"))
        th.host_pos += 1
        ops = th.layout.ops
        th.host_t = t + self.ops[ops[th.host_pos]].cost_ns if th.host_pos < len(ops) else NEVER

    def examine_all(self, t: int) -> None:
        while self.to_examine:
            q = self.to_examine.pop() if self.fast_engine_ties else self.to_examine.popleft()
            if q >= 0:
                self.examine(q, t)
            else:
                th = self.threads[HOST - q]
                if th.host_wait:
                    self.check_host(th, t)

    # -- rules 2 and 3 per device ------------------------------------------------------------------
    def sync_scope(self, s: int) -> tuple[Device, list[int]]:
        """Stream ``s``'s own device: its legacy stream and implicit synchronisations."""
        d = self.devices[self.layout.stream_device[s]]
        return d, d.layout.streams

    def implicit_sync(self, d: Device) -> None:  # type: ignore[override]
        tails = (self.tail[s] for s in d.layout.streams)
        d.barrier_ops = [x for x in tails if x >= 0 and self.state[x].done < 0]
        d.barrier_id += 1

    def launch_latency(self, op: OpFacts) -> int:
        """A peer copy is a copy (``copy_launch_latency_us``), a collective a kernel launch."""
        if op.kind == "peer_copy":
            return round(self.preset.copy_launch_latency_us * 1000.0)
        if op.engine is Engine.COLLECTIVE:
            return round(self.preset.kernel_launch_latency_us * 1000.0)
        return super().launch_latency(op)

    # -- rules 5 to 8 per device, peer copies and collectives ----------------------------------------
    def to_engine(self, i: int, t: int) -> None:
        op = self.ops[i]
        if op.engine is Engine.PEER:
            src, dst, latency = self.layout.peers[i]
            work = op.solo_ns - latency
            self.links.ready.append(ReadyPeer(t, i, src, dst, op.stream, latency, work))
        elif op.engine is Engine.COLLECTIVE:
            self.state[i].engine = self.device_of(i).compute_engine
            instance = self.collectives.arrive(i, t)
            if instance is not None:
                self.start_collective(instance, t)
        elif op.engine is Engine.COPY:
            d = self.device_of(i)
            direction = H2D if op.kind == "h2d" else D2H
            key = op.stream if op.copy_key is None else op.copy_key
            d.copies.pool_of(direction).append(ReadyCopy(t, i, key, direction, op.solo_ns))
            d.new_work = True
        else:
            super().to_engine(i, t)

    def start_collective(self, instance: Instance, t: int) -> None:
        channels = self.preset.nccl_channels
        n = len(instance.ops)
        for rank, i in enumerate(instance.ops):
            d = self.device_of(i)
            self.state[i].start = t
            if rank:  # one call: its ranks' ops start together (critical path, arrows)
                self.edges.append((instance.ops[0], i, "collective"))
            instance.works.append(hold_channels(d.sms, i, channels, t))
            d.new_work = True
            if n > 1:
                nxt = instance.devices[(rank + 1) % n]
                self.link_use.add(i, self.links.name(instance.devices[rank], nxt))

    def to_sms(self, i: int, t: int) -> None:
        d = self.device_of(i)
        op, p = self.ops[i], self.preset
        priority = self.streams[op.stream].priority
        if op.kernel is not None:
            if p.completion_signal_delay:
                self.join_group(d, i, op.stream)
            shape = op.kernel
            work = SmWork(i, priority, self.arrival(i, t), shape.blocks, shape.slots_per_block,
                          shape.max_resident, shape.block_ns,
                          round(p.kernel_overhead_us * 1000.0))  # fmt: skip
        else:
            per_sm = max(1, min(p.max_blocks_per_sm, p.max_threads_per_sm // 256))
            work = SmWork(i, priority, self.arrival(i, t), p.sm_count,
                          p.max_threads_per_sm // per_sm, p.sm_count * per_sm,
                          float(max(1, op.solo_ns)))  # fmt: skip
        d.sms.add(work)
        self.state[i].engine = d.compute_engine
        d.new_work = True

    def join_group(self, d: Device, i: int, s: int) -> None:
        """As Simulation.join_fermi_group, "the call before it" being its host thread's."""
        prev, prev_stream, group = d.last_kernel
        pos = self.call_pos[i]
        before = self.thread_of[i].layout.ops[pos - 1] if pos else -1
        if not (prev == before and prev_stream != s and group.running > 0):
            group = FermiGroup()
        group.running += 1
        self.fermi_groups[i] = group
        d.last_kernel = (i, s, group)

    def wake_after_latency(self, i: int, waiters: list[int], t: int) -> None:
        """As Simulation.wake_after_latency, with a host thread per device."""
        latency = self.latency
        assert latency is not None
        for q in waiters:
            if q >= 0 and self.queues[q]:
                head = self.state[self.queues[q][0]]
                delay = latency(self.state[i].engine_class, head.engine_class)
                if delay:
                    self.clock.at(t + delay, QueueTimer(q))
                    continue
            self.to_examine.append(q)

    def _wakes_late(self, i: int) -> bool:
        if self.ops[i].engine is Engine.COPY:
            return True
        shared = self.device_of(i).layout.shared_queues or self.preset.completion_signal_delay
        return self.ops[i].engine in (Engine.KERNEL, Engine.SM_COPY) and not shared
