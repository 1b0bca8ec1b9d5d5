"""Seeded random multi-GPU pipelines for the held-out multi-GPU fidelity benchmark.

``python benchmarks/fidelity/generate_multi.py --count 40 --devices 2 --out DIR`` writes
``DIR/fid-<seed>.json`` for seeds 0 .. count-1 (the names report.py and measurements.py read), each on ``--devices`` GPUs (``--preset``
names the device preset written into the files; the measuring stage replaces it with the
calibrated one). Each pipeline is built from segments drawn from what multi-GPU programs do:

* **data-parallel steps**: every device computes layer kernels on its compute stream and
  all-reduces gradient buckets on a communication stream that waits for each bucket's event;
  the optimizer kernel waits for the last all-reduce (DDP);
* **pipeline-parallel hand-offs**: a device computes a stage, peer-copies its activations to
  the next device (on either end's stream), which waits on an event and computes the next
  stage;
* **other collectives**: reduce-scatter then all-gather (ZeRO / FSDP), broadcast from a root;
* **per-device work**: chunked H2D -> kernel -> D2H on a device's own streams, with events.

Every device's host thread issues its own ops in list order, and every collective is issued
once by every member, in the same order on each (as NCCL requires). Sizes keep each pipeline
between about 0.5 and 20 ms on H200s over NVLink. :func:`split` (as in generate.py) names the
half a seed belongs to; no timing parameter is fitted on these runs at all (the preset comes
from the calibration made in the same device call), so both halves are held out from fitting,
and the odd seeds are the ones quoted.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import BLOCKS, COPY_SIZES, MIB, THREADS, split  # noqa: E402

from swimlanes.model.document import Communicator, Device, Op, Pipeline, Stream  # noqa: E402
from swimlanes.model.io import save_pipeline  # noqa: E402

__all__ = ["multi_fidelity_pipeline", "split"]

#: Gradient buckets and collective payloads: 256 KiB to 64 MiB.
COLLECTIVE_SIZES = (256 << 10, MIB, 4 * MIB, 16 * MIB, 25 * MIB, 64 * MIB)
#: Activations handed from one device to the next.
PEER_SIZES = (MIB, 4 * MIB, 16 * MIB, 64 * MIB)


class _MultiBuilder:
    """One multi-device pipeline under construction."""

    def __init__(self, rng: random.Random, devices: int) -> None:
        self.rng = rng
        self.devices = [f"gpu{d}" for d in range(devices)]
        self.program: list[Op] = []
        self.streams: list[Stream] = []
        self.events = 0
        for d in self.devices:
            self.streams += [
                Stream(f"{d} compute", "non_blocking", 0, device=d),
                Stream(f"{d} comm", "non_blocking", rng.choice((0, 0, -1)), device=d),
                Stream(f"{d} copy", "non_blocking", 0, device=d),
            ]

    def stream(self, device: str, role: str) -> str:
        return f"{device} {role}"

    def kernel(self, stream: str, label: str, scale: float = 1.0) -> None:
        rng = self.rng
        op = Op("kernel", stream=stream, label=label, blocks=rng.choice(BLOCKS[2:]))
        op.threads = rng.choice(THREADS[2:])
        if rng.random() < 0.6:
            op.duration_us = round(rng.uniform(10.0, 300.0) * scale, 1)
        else:
            op.block_us = round(rng.uniform(5.0, 80.0) * scale, 1)
        self.program.append(op)

    def record(self, stream: str) -> str:
        event = f"e{self.events}"
        self.events += 1
        self.program.append(Op("event_record", stream=stream, event=event))
        return event

    def wait(self, stream: str, event: str) -> None:
        self.program.append(Op("event_wait", stream=stream, event=event))

    def collective(self, kind: str, nbytes: int, label: str, root: str | None = None) -> None:
        """One collective instance: the op on every device's comm stream, in device order."""
        for d in self.devices:
            op = Op(kind, stream=self.stream(d, "comm"), label=label, bytes=nbytes)
            op.communicator = "world"
            op.root = root
            self.program.append(op)

    # -- segments ---------------------------------------------------------------------------
    def data_parallel(self) -> None:
        """Backward layers per device, a bucketed all-reduce each, the optimizer last (DDP)."""
        rng = self.rng
        layers, per_bucket = rng.randint(3, 8), rng.randint(1, 3)
        nbytes = rng.choice(COLLECTIVE_SIZES)
        kernel_us = rng.uniform(20.0, 250.0)
        bucket = 0
        for layer in range(layers):
            for d in self.devices:
                op = Op("kernel", stream=self.stream(d, "compute"), label=f"bwd {layer}")
                op.blocks, op.threads, op.duration_us = 528, 256, round(kernel_us, 1)
                self.program.append(op)
            if (layer + 1) % per_bucket == 0 or layer == layers - 1:
                for d in self.devices:
                    event = self.record(self.stream(d, "compute"))
                    self.wait(self.stream(d, "comm"), event)
                self.collective("all_reduce", nbytes, f"all_reduce bucket {bucket}")
                bucket += 1
        for d in self.devices:
            self.wait(self.stream(d, "compute"), self.record(self.stream(d, "comm")))
            self.kernel(self.stream(d, "compute"), "optimizer", scale=0.5)

    def pipeline_parallel(self) -> None:
        """Stages on consecutive devices, activations handed on by peer copies."""
        rng = self.rng
        nbytes = rng.choice(PEER_SIZES)
        for micro in range(rng.randint(2, 4)):
            for i, d in enumerate(self.devices):
                self.kernel(self.stream(d, "compute"), f"stage {i} mb {micro}")
                if i + 1 == len(self.devices):
                    break
                nxt = self.devices[i + 1]
                # cudaMemcpyPeerAsync may be issued on either end's stream
                on = d if rng.random() < 0.5 else nxt
                event = self.record(self.stream(d, "compute"))
                self.wait(self.stream(on, "copy"), event)
                op = Op("peer_copy", stream=self.stream(on, "copy"), label=f"act {i}->{i + 1}")
                op.bytes, op.src_device, op.dst_device = nbytes, d, nxt
                self.program.append(op)
                self.wait(self.stream(nxt, "compute"), self.record(self.stream(on, "copy")))

    def sharded(self) -> None:
        """Reduce-scatter of gradients, a local update, all-gather of parameters (ZeRO)."""
        rng = self.rng
        nbytes = rng.choice(COLLECTIVE_SIZES)
        for d in self.devices:
            self.kernel(self.stream(d, "compute"), "grads")
            self.wait(self.stream(d, "comm"), self.record(self.stream(d, "compute")))
        self.collective("reduce_scatter", nbytes, "reduce_scatter grads")
        for d in self.devices:
            self.wait(self.stream(d, "compute"), self.record(self.stream(d, "comm")))
            self.kernel(self.stream(d, "compute"), "shard update", scale=0.3)
            self.wait(self.stream(d, "comm"), self.record(self.stream(d, "compute")))
        self.collective("all_gather", nbytes, "all_gather params")
        if rng.random() < 0.5:
            root = rng.choice(self.devices)
            self.collective("broadcast", rng.choice(COLLECTIVE_SIZES[:4]), "broadcast", root)

    def local(self) -> None:
        """Chunked H2D -> kernel -> D2H on one device's copy and compute streams."""
        rng = self.rng
        d = rng.choice(self.devices)
        nbytes = rng.choice(COPY_SIZES[1:6])
        for c in range(rng.randint(2, 5)):
            s = self.stream(d, rng.choice(("copy", "compute")))
            self.program.append(Op("h2d", stream=s, label=f"{d} in {c}", bytes=nbytes))
            self.kernel(s, f"{d} work {c}")
            self.program.append(Op("d2h", stream=s, label=f"{d} out {c}", bytes=nbytes))

    def finish(self) -> None:
        for d in self.devices:
            self.program.append(Op("device_sync", device=d))


def multi_fidelity_pipeline(seed: int, devices: int = 2, preset: str = "") -> Pipeline:
    """The multi-device pipeline of ``seed`` on ``devices`` GPUs (deterministic)."""
    rng = random.Random(f"multi-{devices}-{seed}")
    b = _MultiBuilder(rng, devices)
    segments = [b.data_parallel, b.pipeline_parallel, b.sharded, b.local]
    for _ in range(rng.randint(2, 4)):
        rng.choice(segments)()
    b.finish()
    pipeline = Pipeline(
        name=f"fid-{seed:04d}",
        streams=b.streams,
        program=b.program,
        devices=[Device(d) for d in b.devices],
        communicators=[Communicator("world", list(b.devices))],
    )
    pipeline.extra["device"] = preset or f"{devices}x-h200-nvlink"
    pipeline.extra["description"] = (
        f"Multi-GPU fidelity pipeline {seed} ({split(seed)} half), {devices} devices."
    )
    return pipeline


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--preset", default="", help="device preset written into each file")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed in range(args.count):
        pipeline = multi_fidelity_pipeline(seed, args.devices, args.preset)
        save_pipeline(pipeline, out / f"{pipeline.name}.json")
    print(f"wrote {args.count} pipelines on {args.devices} devices to {out}")


if __name__ == "__main__":
    main()
