"""The multi-GPU fidelity generator (benchmarks/fidelity/generate_multi.py): every seed gives a
valid pipeline that simulates on its preset within the sizes the device stage budgets for."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from swimlanes.engine import get_preset, simulate
from swimlanes.model.io import pipeline_from_json, pipeline_to_json

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "fidelity"))

from generate_multi import multi_fidelity_pipeline  # noqa: E402


@pytest.mark.parametrize("devices", [2, 4])
def test_every_seed_loads_back_and_simulates_in_budget(devices: int) -> None:
    kinds: set[str] = set()
    for seed in range(12):
        pipeline = multi_fidelity_pipeline(seed, devices)
        again = pipeline_from_json(pipeline_to_json(pipeline))  # validated, collectives matched
        assert pipeline_to_json(again) == pipeline_to_json(pipeline)
        tl = simulate(again, get_preset(f"{devices}x-h200-nvlink"))
        assert 0.3e6 < tl.makespan_ns < 25e6, (seed, tl.makespan_ns)
        kinds |= {op.op for op in pipeline.program}
    assert {"peer_copy", "all_reduce", "reduce_scatter", "all_gather"} <= kinds


def test_a_seed_always_gives_the_same_pipeline() -> None:
    a, b = multi_fidelity_pipeline(7, 2), multi_fidelity_pipeline(7, 2)
    assert pipeline_to_json(a) == pipeline_to_json(b)
    assert pipeline_to_json(a) != pipeline_to_json(multi_fidelity_pipeline(8, 2))
