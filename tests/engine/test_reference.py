"""Differential tests: the fast engine and the reference simulator give identical timelines.

The reference (swimlanes.engine.reference) is a plainly written model of the simulator's
semantics; every column of the op table, the dependency edges and the SMs-busy step function
must agree exactly (int64 ns) on random pipelines and every shipped example, on every preset.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import pipelines

from swimlanes.engine import preset_names, simulate
from swimlanes.engine.reference import simulate_reference
from swimlanes.model.document import Pipeline
from swimlanes.model.io import load_pipeline
from swimlanes.timeline.timeline import Timeline

EXAMPLES = sorted((Path(__file__).parents[2] / "resources" / "examples").glob("*.json"))
PRESETS = preset_names()
#: Per-op columns of the Timeline, and the occupancy step function.
COLUMNS = (
    "index", "kind", "stream", "engine", "issue_start", "issue_end", "start", "end", "solo_ns",
    "bytes", "occupancy_time", "occupancy_sms",
)  # fmt: skip


def edges(timeline: Timeline) -> list[tuple[int, int, int]]:
    """The dependency edges as a sorted list (their order in the columns means nothing)."""
    return sorted(
        zip(
            timeline.dep_src.tolist(),
            timeline.dep_dst.tolist(),
            timeline.dep_kind.tolist(),
            strict=True,
        )
    )


def differences(fast: Timeline, reference: Timeline) -> list[str]:
    """What differs between two timelines, one line per column (empty: identical)."""
    out = []
    for name in COLUMNS:
        a, b = getattr(fast, name), getattr(reference, name)
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
            rows = np.flatnonzero(a != b)[:5].tolist() if a.shape == b.shape else "shape"
            out.append(f"{name}: fast {a.tolist()} reference {b.tolist()} (rows {rows})")
    for name in ("labels", "stream_names", "engine_names", "sm_count", "device", "name", "meta"):
        if getattr(fast, name) != getattr(reference, name):
            out.append(
                f"{name}: fast {getattr(fast, name)!r} reference {getattr(reference, name)!r}"
            )
    if edges(fast) != edges(reference):
        out.append(f"edges: fast {edges(fast)} reference {edges(reference)}")
    return out


def assert_same(pipeline: Pipeline, preset: str) -> None:
    fast, reference = simulate(pipeline, preset), simulate_reference(pipeline, preset)
    problems = differences(fast, reference)
    assert not problems, f"{pipeline.name} on {preset}:\n" + "\n".join(problems)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_on_every_preset(path: Path, preset: str) -> None:
    assert_same(load_pipeline(path), preset)


def test_the_examples_and_presets_are_all_there() -> None:
    assert len(EXAMPLES) >= 10
    assert {"ideal", "h200", "c2050"} <= set(PRESETS)


@pytest.mark.parametrize("preset", PRESETS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipeline=pipelines())
def test_random_pipelines(pipeline: Pipeline, preset: str) -> None:
    assert_same(pipeline, preset)


@pytest.mark.benchmark
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipeline=pipelines(max_ops=48), preset=st.sampled_from(PRESETS))
def test_random_pipelines_long(pipeline: Pipeline, preset: str) -> None:
    assert_same(pipeline, preset)


def test_the_comparison_can_fail() -> None:
    """A timeline that differs in one op's end is reported, with the column named."""
    pipeline = load_pipeline(EXAMPLES[0])
    fast = simulate(pipeline, "ideal")
    reference = simulate_reference(pipeline, "ideal")
    reference.end[-1] += 1
    assert any(line.startswith("end:") for line in differences(fast, reference))
