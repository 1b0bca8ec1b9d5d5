"""Write a multi-GPU pipeline cut down to its first N devices, to run it on a smaller machine.

``python tests/gpu/multi/fewer_gpus.py N PIPELINE.json... --out DIR`` keeps the first N
devices, their streams and the ops their host threads issue (peer copies only between kept
devices), and each communicator's kept members; a pipeline of N devices or fewer is copied as
it is. The DDP lessons (8 GPUs) run so on the 2-GPU machine: each device's work is the same,
the all-reduce runs over 2 ranks instead of 8.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from swimlanes.model.document import PEER_COPY, Pipeline
from swimlanes.model.io import load_pipeline, save_pipeline


def fewer(pipeline: Pipeline, n: int) -> Pipeline:
    """``pipeline`` on its first ``n`` devices."""
    if len(pipeline.device_names) <= n:
        return pipeline
    kept = set(pipeline.device_names[:n])
    out = pipeline.copy()
    out.devices = out.devices[:n]
    out.streams = [s for s in out.streams if out.stream_device(s.name) in kept]
    out.program = [
        op
        for op in pipeline.program
        if pipeline.op_device(op) in kept
        and (op.op != PEER_COPY or {op.src_device, op.dst_device} <= kept | {None})
    ]
    for c in out.communicators:
        c.devices = [d for d in c.devices if d in kept]
    out.communicators = [c for c in out.communicators if c.devices]
    out.name = f"{pipeline.name} ({n} GPUs)"
    out.extra["device"] = f"{n}x-h200-nvlink"
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("n", type=int)
    p.add_argument("files", nargs="+")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for f in args.files:
        save_pipeline(fewer(load_pipeline(f), args.n), Path(args.out) / Path(f).name)


if __name__ == "__main__":
    main()
