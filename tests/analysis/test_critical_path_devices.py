"""The critical path of a pipeline on several devices: each device's host thread on its own, and
a collective call held back by its last rank holds back every rank."""

from __future__ import annotations

from swimlanes.analysis.critical_path import critical_path
from swimlanes.engine import get_preset, simulate
from swimlanes.model.validate import pipeline_from_dict
from swimlanes.timeline.timeline import DEP_KINDS


def _two_gpus(late_us: float) -> dict:
    """gpu1 computes ``late_us`` before its all-reduce, gpu0 only 100 us, then each device's
    optimizer kernel follows the all-reduce on its stream."""

    def kernel(stream: str, label: str, us: float) -> dict:
        return {"op": "kernel", "stream": stream, "label": label, "blocks": 132,
                "threads": 256, "duration_us": us}  # fmt: skip

    return {
        "format": "swimlanes-pipeline", "version": 1, "device": "2x-h200-nvlink",
        "devices": [{"name": "gpu0"}, {"name": "gpu1"}],
        "communicators": [{"name": "world", "devices": ["gpu0", "gpu1"]}],
        "streams": [{"name": "s0", "kind": "non_blocking", "device": "gpu0"},
                    {"name": "s1", "kind": "non_blocking", "device": "gpu1"}],
        "program": [
            kernel("s0", "bwd gpu0", 100.0),
            kernel("s1", "bwd gpu1", late_us),
            {"op": "all_reduce", "stream": "s0", "bytes": 1 << 24, "communicator": "world"},
            {"op": "all_reduce", "stream": "s1", "bytes": 1 << 24, "communicator": "world"},
            kernel("s0", "step gpu0", 50.0),
            kernel("s1", "step gpu1", 50.0),
            {"op": "device_sync", "device": "gpu0"},
            {"op": "device_sync", "device": "gpu1"},
        ],
    }  # fmt: skip


def test_a_collective_call_joins_its_ranks_with_an_edge() -> None:
    tl = simulate(pipeline_from_dict(_two_gpus(400.0)), get_preset("2x-h200-nvlink"))
    kinds = [DEP_KINDS[k] for k in tl.dep_kind.tolist()]
    joined = {(s, d) for s, d, k in zip(tl.dep_src.tolist(), tl.dep_dst.tolist(), kinds, strict=True) if
              k == "collective"}  # fmt: skip
    assert joined == {(2, 3)}
    assert tl.start[2] == tl.start[3] and tl.end[2] == tl.end[3]


def test_the_path_runs_through_the_device_that_reached_the_collective_last() -> None:
    tl = simulate(pipeline_from_dict(_two_gpus(400.0)), get_preset("2x-h200-nvlink"))
    cp = critical_path(tl)
    on_path = [tl.labels[s.row] for s in cp.steps if not s.on_host]
    assert "bwd gpu1" in on_path and "bwd gpu0" not in on_path
    # gpu0's kernel could have run 300 us longer: gpu0's rank waited that long for gpu1's
    slack_us = cp.device_slack_ns[0] / 1000.0
    assert abs(slack_us - 300.0) < 2.0, slack_us
    assert cp.device_slack_ns[1] == 0


def test_the_other_device_sets_the_path_when_it_is_the_late_one() -> None:
    spec = _two_gpus(10.0)
    tl = simulate(pipeline_from_dict(spec), get_preset("2x-h200-nvlink"))
    on_path = [tl.labels[s.row] for s in critical_path(tl).steps if not s.on_host]
    assert "bwd gpu0" in on_path and "bwd gpu1" not in on_path
