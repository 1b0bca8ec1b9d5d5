"""Collectives for the multi-device executor: NCCL on GPUs, the host under the simulator.

:class:`NcclCollectives` makes one NCCL communicator per pipeline communicator
(``ncclCommInitAll`` over its devices, in rank order) and prepares each op's call on its stream.
:class:`SimCollectives` stands in under numba's CUDA simulator: every instance (the k-th op of
a communicator on each member) is a barrier of its ranks, and the last rank to arrive computes
the result on the host (a real float32 sum for all-reduce and reduce-scatter, concatenation for
all-gather, the root's buffer for broadcast), so tests can check the data.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import numpy as np

from swimlanes.gpu.backend_api import Buffer, CudaBackend, Step, StreamHandle
from swimlanes.gpu.errors import GpuError
from swimlanes.gpu.multi_plan import MultiOp

#: Seconds a simulated rank waits for the others before the run is declared stuck.
SIM_WAIT_S = 120.0


class Collectives(Protocol):
    """What the multi-device executor needs: a step per collective op, and the ways out."""

    def prepare(self, op: MultiOp, s: StreamHandle, send: Buffer, recv: Buffer) -> Step: ...
    def interrupt(self) -> None:
        """Release host threads waiting in a collective (safe while others still issue)."""

    def abort(self) -> None:
        """End unfinished collectives (every host thread has returned)."""

    def close(self) -> None: ...


def make_collectives(
    backends: list[CudaBackend], communicators: dict[str, list[int]]
) -> Collectives:
    """NCCL communicators for ``communicators`` (name -> device positions, rank order), or
    their host stand-ins under the simulator."""
    if backends[0].simulator:
        return SimCollectives(backends, communicators)
    return NcclCollectives(communicators)


class NcclCollectives:
    """NCCL communicators of one run; each op calls NCCL on its own device's thread."""

    def __init__(self, communicators: dict[str, list[int]]) -> None:
        from swimlanes.gpu.nccl import load_nccl

        self.nccl = load_nccl()
        self.version = self.nccl.version()
        self.comms: dict[str, list[int]] = {}
        self.aborted = False
        for name, members in communicators.items():
            # The executor's device threads select device d for position d: ordinals match.
            self.comms[name] = _in_thread(lambda m=members: self.nccl.init_all(m))

    def prepare(self, op: MultiOp, s: StreamHandle, send: Buffer, recv: Buffer) -> Step:
        nccl, comm, stream = self.nccl, self.comms[op.comm or ""][op.rank], s.handle
        a, b, count, root = send.ptr, recv.ptr, op.count, op.root
        call = {
            "all_reduce": lambda: nccl.all_reduce(a, b, count, comm, stream),
            "reduce_scatter": lambda: nccl.reduce_scatter(a, b, count, comm, stream),
            "all_gather": lambda: nccl.all_gather(a, b, count, comm, stream),
            "broadcast": lambda: nccl.broadcast(a, b, count, root, comm, stream),
        }[op.kind]
        name = {"all_reduce": "ncclAllReduce", "reduce_scatter": "ncclReduceScatter",
                "all_gather": "ncclAllGather", "broadcast": "ncclBroadcast"}[op.kind]  # fmt: skip

        def step() -> None:
            result = call()
            if result:
                nccl.check(result, name)

        return step

    def interrupt(self) -> None:
        """NCCL calls do not wait on the host: nothing to release here."""

    def abort(self) -> None:
        """Stop NCCL kernels that wait for a rank that stopped (a failed or cancelled run)."""
        if self.aborted:
            return
        self.aborted = True
        for comms in self.comms.values():
            for c in comms:
                try:
                    self.nccl.abort(c)
                except GpuError:
                    continue

    def close(self) -> None:
        if not self.aborted:
            for comms in self.comms.values():
                for c in comms:
                    self.nccl.destroy(c)
        self.comms.clear()


def _in_thread(fn: Any) -> Any:
    """Run ``fn`` on a fresh thread: ncclCommInitAll switches the calling thread's device,
    which must not happen on a device thread (nor leave the caller's changed)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed back to the caller
            box["error"] = err

    t = threading.Thread(target=target, name="swimlanes-nccl-init")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class SimCollectives:
    """Host stand-ins: a barrier per instance; its last rank computes the result."""

    def __init__(self, backends: list[CudaBackend], communicators: dict[str, list[int]]) -> None:
        self.backends = backends
        self.communicators = communicators
        self.ranks: dict[tuple[str, int], dict[int, tuple[MultiOp, np.ndarray, np.ndarray]]] = {}
        self.barriers: dict[tuple[str, int], threading.Barrier] = {}

    def prepare(self, op: MultiOp, s: StreamHandle, send: Buffer, recv: Buffer) -> Step:
        key = (op.comm or "", op.instance)
        be: Any = self.backends[op.device]
        views = self.ranks.setdefault(key, {})
        views[op.rank] = (op, be.f32_view(send), be.f32_view(recv))
        if key not in self.barriers:
            self.barriers[key] = threading.Barrier(op.nranks, action=lambda: _compute(views))
        barrier = self.barriers[key]
        entry = (op.kind, s.name, op.count, op.comm, op.rank)

        def step() -> None:
            be._log(*entry)
            try:
                barrier.wait(SIM_WAIT_S)
            except threading.BrokenBarrierError:
                raise GpuError(
                    f"{op.kind} on communicator {op.comm!r}: another device stopped"
                ) from None

        return step

    def interrupt(self) -> None:
        for barrier in self.barriers.values():
            barrier.abort()

    def abort(self) -> None:
        self.interrupt()

    def close(self) -> None:
        self.ranks.clear()
        self.barriers.clear()


def _compute(views: dict[int, tuple[MultiOp, np.ndarray, np.ndarray]]) -> None:
    """One instance's result, on the host, into every rank's receive buffer."""
    ranks = sorted(views)
    op = views[ranks[0]][0]
    n, count = op.nranks, op.count
    sends = [views[r][1] for r in ranks]
    if op.kind == "all_reduce":
        total = np.sum([x[:count] for x in sends], axis=0, dtype=np.float32)
        for r in ranks:
            views[r][2][:count] = total
    elif op.kind == "reduce_scatter":
        total = np.asarray(np.sum([x[: count * n] for x in sends], axis=0, dtype=np.float32))
        for r in ranks:
            views[r][2][:count] = total[r * count : (r + 1) * count]
    elif op.kind == "all_gather":
        whole = np.concatenate([x[:count] for x in sends])
        for r in ranks:
            views[r][2][: count * n] = whole
    else:  # broadcast
        for r in ranks:
            views[r][2][:count] = sends[op.root][:count]
