"""Build the shipped multi-GPU lessons (resources/examples/ddp-buckets-*.json and
peer-copy-split.json) deterministically, with the figures their lesson texts quote simulated on
their presets; run from the repository root: ``python benchmarks/make_multi_gpu_lessons.py``.

``--check`` writes nothing and exits 1 when a shipped file differs from what the script builds
(the figures moved: run it without ``--check`` and update docs/multi-gpu.md from
``docs/scripts/figures.py``).

The DDP step is a GPT-2-medium-sized transformer (24 layers, d_model 1024, sequences of 1024
tokens) trained with PyTorch DistributedDataParallel on 8 GPUs: per device a compute stream runs
the backward pass layer by layer in reverse, a gradient bucket is ready once its last tensor's
gradient is computed (an event recorded on the compute stream), a communication stream waits
for it and all-reduces the bucket across the "world" communicator, and the optimizer step waits
for the last all-reduce. Buckets are formed as PyTorch forms them: tensors in reverse order, a
bucket closes once it holds ``bucket_cap_mb`` or more.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from swimlanes.model.document import Communicator, Device, Op, Pipeline, Stream
from swimlanes.model.io import pipeline_to_json

EXAMPLES = Path(__file__).resolve().parent.parent / "resources" / "examples"

# -- the DDP step ---------------------------------------------------------------------------------
DDP_DEVICE = "8x-h200-nvlink"
DDP_GPUS = 8
LAYERS = 24
D_MODEL = 1024
SEQ_LEN = 1024
#: Sequences per GPU per step (the micro-batch).
MICRO_BATCH = 4
TOKENS = MICRO_BATCH * SEQ_LEN
#: Sustained BF16 tensor-core rate of a transformer's GEMMs on an H200 (about 40% of its dense
#: peak of 989 TFLOP/s), which sets each backward kernel's time from its FLOPs.
GEMM_TFLOPS = 400.0
#: The fused AdamW step is memory-bound: 28 bytes of traffic per parameter (read parameter,
#: gradient and both moments, write parameter and moments) at 80% of the H200's 4.8 TB/s.
ADAM_BYTES_PER_PARAM = 28
ADAM_GBPS = 0.8 * 4800.0
GRAD_BYTES = 4  # fp32 gradients (mixed precision keeps fp32 master weights)
#: Thread blocks of a backward GEMM: 10 waves of one block per SM on 132 SMs, so a kernel slows
#: down when NCCL's channels take some of the SMs.
GEMM_BLOCKS = 1320
BUCKET_SIZES_MB = (10, 25, 50)


@dataclass(frozen=True)
class Tensor:
    """One weight of the model: its name, parameters, and the FLOPs of its backward kernel."""

    layer: int
    part: str
    params: int
    extra_flops: float = 0.0

    @property
    def grad_bytes(self) -> int:
        return self.params * GRAD_BYTES

    @property
    def backward_us(self) -> float:
        # dX = dY W^T and dW = X^T dY: 2 GEMMs of 2 * tokens * params FLOPs each.
        return (4.0 * TOKENS * self.params + self.extra_flops) / (GEMM_TFLOPS * 1e6)

    @property
    def label(self) -> str:
        return f"L{self.layer} {self.part}"


def backward_tensors() -> list[Tensor]:
    """The model's weights in the order the backward pass computes their gradients (last layer
    first, and in each layer the MLP before the attention). Biases and LayerNorms (0.1% of the
    parameters) are left out, and so is the token embedding, frozen here: its 206 MB gradient
    would be one more bucket of its own at the very end whatever the cap."""
    d = D_MODEL
    # The attention core (Q K^T and the weighted sum of V) has no weights but costs FLOPs: its
    # backward (twice the forward's 4 * tokens * seq_len * d) is counted with the output
    # projection's kernel.
    core = 8.0 * TOKENS * SEQ_LEN * d
    out = []
    for layer in reversed(range(LAYERS)):
        out += [
            Tensor(layer, "MLP down", 4 * d * d),
            Tensor(layer, "MLP up", 4 * d * d),
            Tensor(layer, "attention out", d * d, core),
            Tensor(layer, "QKV", 3 * d * d),
        ]
    return out


def buckets(tensors: list[Tensor], cap_mb: int) -> list[list[Tensor]]:
    """PyTorch DDP's bucket assignment: tensors in backward order, a bucket closes as soon as
    it holds ``cap_mb`` MiB or more (so a bucket overshoots the cap by up to one tensor)."""
    cap = cap_mb * 2**20
    out: list[list[Tensor]] = [[]]
    for t in tensors:
        out[-1].append(t)
        if sum(x.grad_bytes for x in out[-1]) >= cap:
            out.append([])
    return [b for b in out if b]


def _ddp_device_ops(dev: str, plan: list[list[Tensor]]) -> list[Op]:
    compute, comm = f"{dev} compute", f"{dev} comm"
    ops: list[Op] = []
    for k, bucket in enumerate(plan):
        for t in bucket:
            ops.append(
                Op(
                    op="kernel", stream=compute, label=f"{dev} {t.label} backward",
                    duration_us=round(t.backward_us, 3), blocks=GEMM_BLOCKS, threads=256,
                    extra={"blocks_per_sm": 1},
                )
            )  # fmt: skip
        event = f"{dev} bucket {k} ready"
        nbytes = sum(t.grad_bytes for t in bucket)
        ops += [
            Op(op="event_record", stream=compute, event=event),
            Op(op="event_wait", stream=comm, event=event),
            Op(
                op="all_reduce", stream=comm, label=f"{dev} all-reduce bucket {k}",
                bytes=nbytes, communicator="world",
            ),
        ]  # fmt: skip
    params = sum(t.params for b in plan for t in b)
    done = f"{dev} gradients reduced"
    ops += [
        Op(op="event_record", stream=comm, event=done),
        Op(op="event_wait", stream=compute, event=done),
        Op(
            op="kernel", stream=compute, label=f"{dev} AdamW step",
            duration_us=round(params * ADAM_BYTES_PER_PARAM / (ADAM_GBPS * 1e3), 3),
            blocks=GEMM_BLOCKS, threads=256, extra={"blocks_per_sm": 1},
        ),
        Op(op="device_sync", device=dev),
    ]  # fmt: skip
    return ops


def ddp_pipeline(cap_mb: int) -> Pipeline:
    """One DDP training step (backward, bucketed all-reduce, optimizer) on 8 GPUs."""
    devices = [f"gpu{i}" for i in range(DDP_GPUS)]
    plan = buckets(backward_tensors(), cap_mb)
    p = Pipeline(
        name=f"DDP step, {cap_mb} MB buckets, 8 GPUs",
        devices=[Device(d) for d in devices],
        communicators=[Communicator("world", list(devices))],
    )
    for dev in devices:
        p.streams += [
            Stream(f"{dev} compute", "non_blocking", 0, device=dev),
            Stream(f"{dev} comm", "non_blocking", 0, device=dev),
        ]
        p.program += _ddp_device_ops(dev, plan)
    return p


# -- the peer-copy pipeline -----------------------------------------------------------------------
PEER_DEVICE = "2x-h200-nvlink"
MIB = 2**20
#: Each half of the batch: its input, the kernel that processes it, its result.
HALF_IN = 256 * MIB
HALF_OUT = 64 * MIB
HALF_KERNEL_US = 15000.0


def _kernel(stream: str, label: str) -> Op:
    return Op(
        op="kernel", stream=stream, label=label, duration_us=HALF_KERNEL_US, blocks=1056,
        threads=256,
    )  # fmt: skip


def peer_copy_pipeline(variant: str = "peer") -> Pipeline:
    """A batch split across two GPUs through gpu0 (``peer``, the lesson): both halves are
    uploaded to gpu0, half B goes on to gpu1 by a peer copy, each GPU processes its half, B's
    result comes back by a peer copy and both results go down from gpu0. ``direct``: gpu1
    uploads and downloads its half itself, over its own PCIe link. ``one_gpu``: gpu0 does all."""
    p = Pipeline(
        name=f"peer copies: a batch split over two GPUs ({variant})",
        devices=[Device("gpu0"), Device("gpu1")],
        streams=[
            Stream("A", "non_blocking", 0, device="gpu0"),
            Stream("B", "non_blocking", 0, device="gpu0"),
            Stream("gpu1 work", "non_blocking", 0, device="gpu1"),
        ],
    )
    up = dict(op="h2d", bytes=HALF_IN, host_memory="pinned")
    down = dict(op="d2h", bytes=HALF_OUT, host_memory="pinned")
    a = [Op(stream="A", label="H2D half A -> gpu0", **up), _kernel("A", "process A on gpu0")]
    if variant == "one_gpu":
        prog = [
            *a,
            Op(stream="B", label="H2D half B -> gpu0", **up),
            _kernel("B", "process B on gpu0"),
            Op(stream="A", label="D2H result A", **down),
            Op(stream="B", label="D2H result B", **down),
        ]
    elif variant == "direct":
        prog = [
            *a,
            Op(stream="gpu1 work", label="H2D half B -> gpu1", **up),
            _kernel("gpu1 work", "process B on gpu1"),
            Op(stream="A", label="D2H result A", **down),
            Op(stream="gpu1 work", label="D2H result B (gpu1)", **down),
        ]
    else:
        # B goes first: it has further to travel (PCIe, then NVLink) before its kernel starts.
        prog = [
            Op(stream="B", label="H2D half B -> gpu0", **up),
            Op(
                op="peer_copy", stream="B", label="peer copy B gpu0 -> gpu1", bytes=HALF_IN,
                src_device="gpu0", dst_device="gpu1",
            ),
            Op(op="event_record", stream="B", event="B on gpu1"),
            *a,
            Op(op="event_wait", stream="gpu1 work", event="B on gpu1"),
            _kernel("gpu1 work", "process B on gpu1"),
            Op(op="event_record", stream="gpu1 work", event="B done"),
            Op(op="event_wait", stream="B", event="B done"),
            Op(
                op="peer_copy", stream="B", label="peer copy result B gpu1 -> gpu0",
                bytes=HALF_OUT, src_device="gpu1", dst_device="gpu0",
            ),
            Op(stream="B", label="D2H result B", **down),
            Op(stream="A", label="D2H result A", **down),
        ]  # fmt: skip
    prog += [Op(op="device_sync", device="gpu0"), Op(op="device_sync", device="gpu1")]
    p.program = prog
    return p


# -- figures and lesson texts ---------------------------------------------------------------------
@dataclass(frozen=True)
class DdpFigures:
    """What a DDP lesson quotes, from its simulation (times in ns, gpu0's view: the devices
    are symmetric)."""

    cap_mb: int
    buckets: int
    bucket_mb: float
    makespan_ns: int
    backward_ns: int
    communication_ns: int
    exposed_ns: int
    tail_ns: int
    calls: int
    latency_ns: int


def ddp_figures(cap_mb: int) -> DdpFigures:
    """Simulate the ``cap_mb`` DDP step on its preset and measure it."""
    from swimlanes.analysis.communication import communication_summary
    from swimlanes.engine import get_preset, simulate

    preset = get_preset(DDP_DEVICE)
    pipeline = ddp_pipeline(cap_mb)
    tl = simulate(pipeline, preset)
    gpu0 = communication_summary(tl, preset.nccl_latency_us)[0]
    backward = [
        i
        for i, op in enumerate(pipeline.program)
        if op.stream == "gpu0 compute" and (op.label or "").endswith("backward")
    ]
    first, last = tl.row_of_index(backward[0]), tl.row_of_index(backward[-1])
    assert first is not None and last is not None
    plan = buckets(backward_tensors(), cap_mb)
    return DdpFigures(
        cap_mb=cap_mb,
        buckets=len(plan),
        bucket_mb=sum(t.grad_bytes for b in plan for t in b) / len(plan) / 1e6,
        makespan_ns=int(tl.makespan_ns),
        backward_ns=int(tl.end[last] - tl.start[first]),
        communication_ns=gpu0.communication_ns,
        exposed_ns=gpu0.exposed_ns,
        tail_ns=max(0, gpu0.communication_end - int(tl.end[last])),
        calls=gpu0.calls,
        latency_ns=gpu0.latency_ns,
    )


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


_DDP_TITLES = {
    10: "DDP gradient buckets: 10 MB, more overlap, more calls",
    25: "DDP gradient buckets: 25 MB, PyTorch's default",
    50: "DDP gradient buckets: 50 MB, fewer calls, less overlap",
}


def one_stream(pipeline: Pipeline) -> Pipeline:
    """The same step with each device's all-reduces on its compute stream: no overlap."""
    out = pipeline.copy()
    for op in out.program:
        if op.stream and op.stream.endswith(" comm"):
            op.stream = op.stream.replace(" comm", " compute")
    return out


def ddp_description(f: DdpFigures, everyone: dict[int, DdpFigures]) -> str:
    """The lesson text of one bucket size, with every figure from the simulations."""
    from swimlanes.engine import get_preset, simulate

    preset = get_preset(DDP_DEVICE)
    tensors = backward_tensors()
    params = sum(t.params for t in tensors)
    alone = sum(round(t.backward_us, 3) for t in tensors) * 1000
    serial = simulate(one_stream(ddp_pipeline(f.cap_mb)), preset).makespan_ns
    others = "; ".join(
        f"{c} MB buckets {_ms(o.makespan_ns)}" for c, o in everyone.items() if c != f.cap_mb
    )
    best = min(everyone.values(), key=lambda o: o.makespan_ns).cap_mb
    return (
        f"One PyTorch DDP training step on 8 H200s over NVLink ({DDP_DEVICE}) of a "
        f"GPT-2-medium-sized transformer ({LAYERS} layers, d_model {D_MODEL}, "
        f"{params / 1e6:.0f}M weights, {params * GRAD_BYTES / 1e9:.2f} GB of fp32 gradients) "
        f"with {MICRO_BATCH} sequences of {SEQ_LEN} tokens per GPU; the forward pass, the same "
        "for every bucket size, is left out. Each GPU's compute stream runs the backward pass "
        "tensor by tensor from the last layer down (each kernel's time is its FLOPs at "
        f"{GEMM_TFLOPS:.0f} TFLOP/s of BF16 tensor-core work: {_ms(alone)} in all). With "
        f"bucket_cap_mb={f.cap_mb} the gradients form {f.buckets} buckets "
        f"({f.bucket_mb:.1f} MB on average): when a bucket's last gradient is computed, the "
        "compute stream records an event, the communication stream waits for it and "
        "all-reduces the bucket across the 8 GPUs (ncclAllReduce) while the next layers "
        f"compute; the AdamW step waits for the last all-reduce. The {f.calls} all-reduces "
        f"take {_ms(f.communication_ns)} per GPU, {_ms(f.latency_ns)} of it per-call latency "
        f"({preset.nccl_latency_us:g} us a call); all but {_ms(f.exposed_ns)} of it hides "
        f"behind the backward pass, which stretches to {_ms(f.backward_ns)} because each "
        f"all-reduce takes {preset.nccl_channels} of the {preset.sm_count} SMs. The step takes "
        f"{_ms(f.makespan_ns)}; {others}; with the all-reduces on the compute stream (nothing "
        f"overlaps) {_ms(serial)}. Smaller buckets start communicating sooner and leave less "
        "exposed after the backward pass, but pay the per-call latency more often and take "
        f"SMs from the backward kernels for longer: here {best} MB is the fastest of the "
        "three. Compare the communication rows of the three bucket sizes, then move the "
        "all-reduces onto the compute stream to see the insight about communication that does "
        "not overlap."
    )


def peer_figures() -> dict[str, int]:
    """Makespans of the peer-copy lesson and its two alternatives on their preset."""
    from swimlanes.engine import simulate

    return {
        v: int(simulate(peer_copy_pipeline(v), PEER_DEVICE).makespan_ns)
        for v in ("peer", "direct", "one_gpu")
    }


def peer_description(ms: dict[str, int]) -> str:
    return (
        f"A batch is split across two H200s joined by NVLink ({PEER_DEVICE}). Both halves "
        f"({HALF_IN // MIB} MiB each) are uploaded to gpu0, and half B goes on to gpu1 with a "
        "peer copy (cudaMemcpyPeerAsync, over NVLink, on a copy engine at each end) while half "
        "A is uploaded; an event tells gpu1's stream when B has arrived, another tells gpu0 "
        f"when gpu1's result is ready, a peer copy brings that {HALF_OUT // MIB} MiB result "
        "back and gpu0 downloads both results. B is uploaded first: it has further to go "
        "before its kernel can start. The peer copies are short beside the PCIe uploads (look "
        f"at the NVLink rows), and the step takes {_ms(ms['peer'])} against "
        f"{_ms(ms['one_gpu'])} on gpu0 alone. Now look at gpu0's H2D engine row: every byte "
        "still crosses gpu0's PCIe link, one half after the other. Let gpu1 upload and "
        "download its half itself (an H2D and a D2H on gpu1's stream instead of the peer "
        f"copies and their events) and the two uploads run side by side: {_ms(ms['direct'])}."
    )


def build() -> dict[str, str]:
    """Every multi-GPU example file's text, by example name."""
    out = {}
    figures = {cap: ddp_figures(cap) for cap in BUCKET_SIZES_MB}
    for cap, f in figures.items():
        p = ddp_pipeline(cap)
        p.extra.update(
            lesson=_DDP_TITLES[cap], device=DDP_DEVICE, description=ddp_description(f, figures)
        )
        out[f"ddp-buckets-{cap}mb"] = pipeline_to_json(p)
    p = peer_copy_pipeline()
    p.extra.update(
        lesson="Peer copies: split a batch across two GPUs",
        device=PEER_DEVICE,
        description=peer_description(peer_figures()),
    )
    out["peer-copy-split"] = pipeline_to_json(p)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for name, text in build().items():
        path = EXAMPLES / f"{name}.json"
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
            continue
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.name}")
    if stale:
        print("stale: " + ", ".join(stale), file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
