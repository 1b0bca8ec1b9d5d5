"""Seeded random pipelines for the held-out fidelity benchmark.

``python benchmarks/fidelity/generate.py --count 120 --out DIR`` writes ``DIR/fid-<seed>.json``
for seeds 0 .. count-1. Each pipeline is built from a few segments drawn from the patterns real
stream programs use (chunked copy/compute/copy pipelines issued breadth- or depth-first,
producer/consumer chains joined by events, and a random mix of every op kind), so that every op
kind and stream kind turns up across the set: pinned and pageable, synchronous and asynchronous
copies, d2d, memsets, kernels of many grid shapes and all three timing forms (``duration_us``,
``block_us``, ``flops``/``bytes``), events across streams, event/stream/device syncs, host work,
``host_func``, malloc/free, priorities, non-blocking and per-thread default streams, legacy
default stream ops, and more streams than hardware connections.

Sizes keep every pipeline between about 0.5 and 20 ms on an H100/H200, so that 100+ of them
measure in a few minutes. :func:`split` names the half a seed belongs to: timing parameters
may be fitted on ``train`` (even seeds); figures are reported on ``held_out`` (odd seeds).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.model.io import save_pipeline

KIB, MIB = 1 << 10, 1 << 20
COPY_SIZES = (64 * KIB, 256 * KIB, MIB, 2 * MIB, 4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB)
PAGEABLE_SIZES = (64 * KIB, 256 * KIB, MIB, 4 * MIB, 8 * MIB)
BLOCKS = (1, 8, 66, 132, 264, 528, 1056, 2112, 4224)
THREADS = (32, 64, 128, 256, 512, 1024)


def split(seed: int) -> str:
    """``train`` for even seeds, ``held_out`` for odd ones."""
    return "train" if seed % 2 == 0 else "held_out"


class _Builder:
    """One pipeline under construction: its streams, program and recorded events."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.program: list[Op] = []
        self.streams: list[Stream] = []
        self.events = 0
        self.recorded: list[str] = []
        self.mallocs = 0

    def add_streams(self) -> None:
        rng = self.rng
        n = rng.choice((2, 2, 3, 4, 4, 5, 6, 8, 8, 10, 12))
        prioritised = rng.random() < 0.3
        for i in range(n):
            roll = rng.random()
            kind = "non_blocking" if roll < 0.25 else "blocking"
            if i == n - 1 and rng.random() < 0.1:
                kind = "per_thread_default"
            priority = rng.choice((0, 0, -1, -2, -5)) if prioritised else 0
            self.streams.append(Stream(f"s{i}", kind, priority))

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.streams]

    # -- single ops -------------------------------------------------------------------------
    def copy(self, kind: str, stream: str | None, label: str, *, pageable: bool = False) -> None:
        rng = self.rng
        if kind == "d2d":
            self.program.append(Op("d2d", stream=stream, label=label, bytes=rng.choice(COPY_SIZES)))
            return
        sizes = PAGEABLE_SIZES if pageable else COPY_SIZES
        op = Op(kind, stream=stream, label=label, bytes=rng.choice(sizes))
        op.host_memory = "pageable" if pageable else "pinned"
        if rng.random() < 0.08:
            op.is_async = False
        self.program.append(op)

    def kernel(self, stream: str | None, label: str, scale: float = 1.0) -> None:
        rng = self.rng
        op = Op("kernel", stream=stream, label=label)
        op.blocks = rng.choice(BLOCKS)
        op.threads = rng.choice(THREADS)
        form = rng.random()
        if form < 0.45:
            op.duration_us = round(rng.uniform(5.0, 400.0) * scale, 1)
        elif form < 0.85:
            # block_us: the kernel's time follows its waves; keep it under ~1 ms.
            op.block_us = round(rng.uniform(2.0, 120.0) * scale, 1)
            waves_guess = max(1, op.blocks // 1000)
            op.block_us = max(1.0, round(min(op.block_us, 900.0 / waves_guess), 1))
        else:
            op.flops = float(rng.choice((1e8, 1e9, 5e9)))
            op.bytes = rng.choice((MIB, 16 * MIB, 128 * MIB))
        self.program.append(op)

    def record(self, stream: str) -> str:
        event = f"e{self.events}"
        self.events += 1
        self.program.append(Op("event_record", stream=stream, event=event))
        self.recorded.append(event)
        return event

    def wait(self, stream: str, event: str) -> None:
        self.program.append(Op("event_wait", stream=stream, event=event))

    # -- segments ---------------------------------------------------------------------------
    def chunked(self) -> None:
        """H2D -> kernel -> D2H per chunk over some streams, breadth- or depth-first."""
        rng = self.rng
        streams = rng.sample(self.names, k=rng.randint(2, len(self.names)))
        chunks = rng.randint(len(streams), 3 * len(streams))
        nbytes = rng.choice(COPY_SIZES[1:7])
        pageable = rng.random() < 0.15
        ktime = round(rng.uniform(10.0, 300.0), 1)
        blocks = rng.choice(BLOCKS[2:])
        stages: list[list[Op]] = [[], [], []]
        for c in range(chunks):
            s = streams[c % len(streams)]
            memory = "pageable" if pageable else "pinned"
            stages[0].append(
                Op("h2d", stream=s, label=f"H2D {c}", bytes=nbytes, host_memory=memory)
            )
            k = Op("kernel", stream=s, label=f"K {c}", blocks=blocks, threads=256)
            k.duration_us = ktime
            stages[1].append(k)
            stages[2].append(
                Op("d2h", stream=s, label=f"D2H {c}", bytes=nbytes, host_memory=memory)
            )
        if rng.random() < 0.5:  # breadth-first: all H2Ds, then all kernels, then all D2Hs
            for stage in stages:
                self.program += stage
        else:
            for c in range(chunks):
                self.program += [stages[0][c], stages[1][c], stages[2][c]]

    def producer_consumer(self) -> None:
        """A producer stream feeding consumers through events, maybe joined at the end."""
        rng = self.rng
        producer, *consumers = rng.sample(self.names, k=min(len(self.names), rng.randint(2, 4)))
        for i in range(rng.randint(2, 5)):
            self.copy("h2d", producer, f"load {i}")
            self.kernel(producer, f"produce {i}")
            event = self.record(producer)
            consumer = consumers[i % len(consumers)]
            self.wait(consumer, event)
            self.kernel(consumer, f"consume {i}")
            if rng.random() < 0.5:
                self.copy("d2h", consumer, f"store {i}")
        if rng.random() < 0.5:
            done = [self.record(c) for c in consumers]
            for event in done:
                self.wait(producer, event)
            self.kernel(producer, "join")

    def random_mix(self) -> None:
        """Ops of every kind on random streams."""
        rng = self.rng
        for i in range(rng.randint(6, 16)):
            self._random_op(f"{i}")

    def _random_op(self, tag: str) -> None:
        rng = self.rng
        s = rng.choice(self.names)
        roll = rng.random()
        if roll < 0.18:
            self.copy("h2d", s, f"h2d {tag}", pageable=rng.random() < 0.3)
        elif roll < 0.32:
            self.copy("d2h", s, f"d2h {tag}", pageable=rng.random() < 0.3)
        elif roll < 0.37:
            self.copy("d2d", s, f"d2d {tag}")
        elif roll < 0.42:
            self.program.append(
                Op("memset", stream=s, label=f"memset {tag}", bytes=rng.choice(COPY_SIZES))
            )
        elif roll < 0.70:
            self.kernel(s, f"k {tag}")
        elif roll < 0.76:
            self.record(s)
        elif roll < 0.82 and self.recorded:
            self.wait(s, rng.choice(self.recorded))
        elif roll < 0.85:
            self.program.append(
                Op("host", label=f"host {tag}", duration_us=round(rng.uniform(5, 300), 1))
            )
        elif roll < 0.88:
            op = Op("host_func", stream=s, label=f"callback {tag}")
            op.duration_us = round(rng.uniform(2, 100), 1)
            self.program.append(op)
        elif roll < 0.91:
            self.kernel(None, f"default k {tag}", scale=0.3)  # the legacy default stream
        elif roll < 0.93:
            self.program.append(Op("stream_sync", stream=s))
        elif roll < 0.95 and self.recorded:
            self.program.append(Op("event_sync", event=rng.choice(self.recorded)))
        elif roll < 0.97 and self.mallocs < 2:
            self.mallocs += 1
            self.program.append(Op("malloc", label=f"malloc {tag}", bytes=rng.choice(COPY_SIZES)))
            self.program.append(Op("free", label=f"free {tag}"))
        else:
            self.program.append(
                Op(
                    "memset",
                    stream=s,
                    label=f"memset {tag}",
                    bytes=MIB,
                    is_async=rng.random() < 0.5,
                )
            )

    def build(self, seed: int) -> Pipeline:
        rng = self.rng
        self.add_streams()
        segments = [self.chunked, self.producer_consumer, self.random_mix]
        for k in range(rng.randint(1, 3)):
            rng.choice(segments)()
            if k and rng.random() < 0.3:
                self.program.append(Op(rng.choice(("device_sync", "stream_sync")), stream=None))
                if self.program[-1].op == "stream_sync":
                    self.program[-1].stream = rng.choice(self.names)
        return Pipeline(
            f"fidelity {seed}",
            self.streams,
            self.program,
            extra={
                "description": f"Random pipeline {seed} of the fidelity benchmark ({split(seed)} half)."
            },
        )


def fidelity_pipeline(seed: int) -> Pipeline:
    """The benchmark's pipeline for ``seed`` (deterministic)."""
    return _Builder(random.Random(f"swimlanes-fidelity-{seed}")).build(seed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=120)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed in range(args.first, args.first + args.count):
        save_pipeline(fidelity_pipeline(seed), out / f"fid-{seed:04d}.json")
    print(f"wrote {args.count} pipelines to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
