"""Communication insights and figures: collectives the SMs do not hide, collectives too small
for their per-call cost, and the per-device compute / communication figures the DDP lessons
quote."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from swimlanes.analysis.communication import communication_summary
from swimlanes.analysis.insight_comms import merge_pairs, separate_comm_streams
from swimlanes.analysis.insights import Insight, explain
from swimlanes.engine import get_preset, simulate
from swimlanes.model.document import Communicator, Device, Op, Pipeline, Stream
from swimlanes.timeline.timeline import NO_TIME, TimelineBuilder

US = 1000
REPO = Path(__file__).resolve().parents[2]


def _lessons() -> ModuleType:
    """benchmarks/make_multi_gpu_lessons.py: the DDP and peer-copy pipelines."""
    path = REPO / "benchmarks" / "make_multi_gpu_lessons.py"
    spec = importlib.util.spec_from_file_location("make_multi_gpu_lessons", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


lessons = _lessons()


def _rules(insights: list[Insight]) -> list[str]:
    return [i.rule for i in insights]


def _one(insights: list[Insight], rule: str) -> Insight:
    hits = [i for i in insights if i.rule == rule]
    assert len(hits) == 1, _rules(insights)
    return hits[0]


def one_stream(pipeline: Pipeline) -> Pipeline:
    """The DDP step with each device's all-reduces on its compute stream."""
    out = pipeline.copy()
    for op in out.program:
        if op.stream and op.stream.endswith(" comm"):
            op.stream = op.stream.replace(" comm", " compute")
    return out


# -- figures --------------------------------------------------------------------------------------
def test_communication_summary_splits_hidden_and_exposed_time() -> None:
    p = Pipeline(
        streams=[Stream("s", "blocking"), Stream("c", "blocking")],
        program=[
            Op("kernel", "s", blocks=1, threads=32),
            Op("kernel", "s", blocks=1, threads=32),
            Op("all_reduce", "c", bytes=4096, communicator="world"),
            Op("all_reduce", "c", bytes=4096, communicator="world"),
        ],
        communicators=[Communicator("world", ["gpu0"])],
    )
    b = TimelineBuilder(["default", "s", "c"], ["Compute"])
    spans = [(0, 100), (150, 250), (50, 200), (300, 400)]  # us
    for i, (op, (s, e)) in enumerate(zip(p.program, spans, strict=True)):
        b.add(index=i, kind=op.op, stream=op.stream, engine="Compute", issue_start=0,
              issue_end=0, start=s * US, end=e * US, nbytes=op.bytes or 0, label=f"op{i}")  # fmt: skip
    (gpu0,) = communication_summary(b.build(source="simulated", device="x"), latency_us=15)
    assert gpu0.compute_ns == 200 * US
    assert gpu0.communication_ns == 250 * US
    # 100..150 and 300..400 have no kernel beside the collectives
    assert gpu0.exposed_ns == 150 * US and gpu0.overlapped_ns == 100 * US
    assert (gpu0.calls, gpu0.latency_ns) == (2, 30 * US)
    assert gpu0.tail_ns == 150 * US


@pytest.mark.parametrize("cap", [10, 25, 50])
def test_ddp_figures_are_the_same_on_every_gpu(cap: int) -> None:
    tl = simulate(lessons.ddp_pipeline(cap), lessons.DDP_DEVICE)
    summary = communication_summary(tl, 15.0)
    assert [s.device for s in summary] == [f"gpu{d}" for d in range(8)]
    assert {s.calls for s in summary} == {len(lessons.buckets(lessons.backward_tensors(), cap))}
    assert len({(s.communication_ns, s.exposed_ns) for s in summary}) == 1


def test_smaller_buckets_overlap_more_and_pay_more_per_call() -> None:
    """Seed 004's trade-off, as the DDP lessons quote it."""
    figures = [lessons.ddp_figures(cap) for cap in lessons.BUCKET_SIZES_MB]
    calls = [f.calls for f in figures]
    latency = [f.latency_ns for f in figures]
    exposed = [f.exposed_ns for f in figures]
    assert calls == sorted(calls, reverse=True) and latency == sorted(latency, reverse=True)
    assert exposed == sorted(exposed)
    # more calls: more time in collectives, each taking SMs from the backward kernels
    assert figures[0].communication_ns > figures[2].communication_ns


# -- exposed_communication ------------------------------------------------------------------------
def test_collectives_on_the_compute_stream_are_exposed() -> None:
    p = one_stream(lessons.ddp_pipeline(25))
    found = explain(p, simulate(p, lessons.DDP_DEVICE))
    insight = _one(found, "exposed_communication")
    assert insight.severity == "problem"
    assert "no kernel ran beside them" in insight.message
    assert "The most exposed: 'gpu0 all-reduce bucket 0' on gpu0 compute (#4)" in insight.message
    assert "same stream as the kernels" in insight.message
    assert "communication stream" in insight.advice
    assert len(insight.op_indexes) == 36  # gpu0's all-reduces
    # the what-if moves them back onto a stream of their own: the shipped example's schedule
    shipped = simulate(lessons.ddp_pipeline(25), lessons.DDP_DEVICE).makespan_ns
    assert f"the model predicts {shipped / 1e6:.2f} ms instead of" in insight.message
    assert insight.estimated_saving_ns == simulate(p, lessons.DDP_DEVICE).makespan_ns - shipped


def test_separate_comm_streams_moves_only_collectives_beside_kernels() -> None:
    p = one_stream(lessons.ddp_pipeline(10))
    before = len(p.program)
    separate_comm_streams(p)
    assert [s.name for s in p.streams if s.name.endswith("compute comm")] == [
        f"gpu{d} compute comm" for d in range(8)
    ]
    assert {p.stream_device(f"gpu{d} compute comm") for d in range(8)} == {
        f"gpu{d}" for d in range(8)
    }
    reduces = [op for op in p.program if op.op == "all_reduce"]
    assert all(op.stream and op.stream.endswith("compute comm") for op in reduces)
    # a record and a wait per all-reduce, and one pair after the last one of each device
    assert len(p.program) == before + 2 * len(reduces) + 2 * 8


def test_ddp_with_a_communication_stream_hides_its_collectives() -> None:
    p = lessons.ddp_pipeline(25)
    assert "exposed_communication" not in _rules(explain(p, simulate(p, lessons.DDP_DEVICE)))


# -- small_collectives ----------------------------------------------------------------------------
def tiny_buckets(n_buckets: int = 24, nbytes: int = 256 << 10) -> Pipeline:
    """8 GPUs: per bucket a 100 us kernel, then an all-reduce of ``nbytes`` on a comm stream."""
    devs = [f"gpu{d}" for d in range(8)]
    p = Pipeline(
        name="tiny buckets",
        devices=[Device(d) for d in devs],
        communicators=[Communicator("world", devs)],
    )
    for d in devs:
        p.streams += [Stream(f"{d} c", "non_blocking", device=d), Stream(f"{d} n", device=d)]
        for k in range(n_buckets):
            p.program += [
                Op("kernel", f"{d} c", blocks=132, threads=256, duration_us=100),
                Op("event_record", f"{d} c", event=f"{d} {k}"),
                Op("event_wait", f"{d} n", event=f"{d} {k}"),
                Op("all_reduce", f"{d} n", bytes=nbytes, communicator="world"),
            ]
    return p


def test_tiny_collectives_are_too_small_for_their_per_call_cost() -> None:
    p = tiny_buckets()
    insight = _one(explain(p, simulate(p, lessons.DDP_DEVICE)), "small_collectives")
    assert insight.title.startswith("24 collectives per device too small")
    assert "15 us of latency per NCCL call" in insight.message
    assert "360 GB/s" in insight.message
    assert "6.00 ms" not in insight.message  # the latency is per device, not summed over 8
    assert "360.0 us of latency per device (gpu0: 'all reduce' on gpu0 n (#3)" in insight.message
    # the calls are hidden behind 100 us kernels: merging them would not help
    assert insight.severity == "info" and "would not shorten this run" in insight.message


def test_buckets_of_tens_of_megabytes_are_not_small() -> None:
    p = lessons.ddp_pipeline(10)
    assert "small_collectives" not in _rules(explain(p, simulate(p, lessons.DDP_DEVICE)))


def test_small_collectives_needs_the_presets_latency() -> None:
    p = tiny_buckets()
    tl = simulate(p, lessons.DDP_DEVICE)
    free = dataclasses.replace(get_preset(lessons.DDP_DEVICE), nccl_latency_us=0.0)
    assert "small_collectives" not in _rules(explain(p, tl, preset=free))


def test_merging_pairs_halves_the_calls_on_every_device() -> None:
    p = tiny_buckets(n_buckets=5)
    merge_pairs(p)
    for d in range(8):
        sizes = [op.bytes for op in p.program if op.op == "all_reduce" and op.stream == f"gpu{d} n"]
        assert sizes == [512 << 10, 512 << 10, 256 << 10]
    # still a valid program: every member issues the same calls
    assert simulate(p, lessons.DDP_DEVICE).makespan_ns > 0


def test_single_device_timelines_without_collectives_get_no_communication_insight() -> None:
    p = Pipeline(streams=[Stream("s")], program=[Op("kernel", "s", blocks=1, threads=32)])
    b = TimelineBuilder(["default", "s"], ["Compute"])
    b.add(index=0, kind="kernel", stream="s", engine="Compute", issue_start=0, issue_end=0,
          start=0, end=10_000 * US, nbytes=0, label="k")  # fmt: skip
    tl = b.build(source="simulated", device="h200")
    assert not {"exposed_communication", "small_collectives"} & set(_rules(explain(p, tl)))
    assert communication_summary(tl)[0].calls == 0 and NO_TIME not in tl.end


def test_an_engine_idle_while_only_another_device_works_is_not_an_idle_gap() -> None:
    """gpu0's copy engine waits for gpu1's kernel: gpu0's other engines are idle too, so there
    is no work of gpu0's own to overlap (other devices' engines do not count)."""
    p = Pipeline(
        devices=[Device("gpu0"), Device("gpu1")],
        streams=[Stream("a", device="gpu0"), Stream("b", device="gpu1")],
        program=[
            Op("h2d", "a", bytes=64 << 20),
            Op("kernel", "b", blocks=132, threads=256, duration_us=20_000),
            Op("event_record", "b", event="done"),
            Op("event_wait", "a", event="done"),
            Op("h2d", "a", bytes=64 << 20),
        ],
    )
    tl = simulate(p, "2x-h200-nvlink")
    assert "idle_engine_gap" not in _rules(explain(p, tl))
