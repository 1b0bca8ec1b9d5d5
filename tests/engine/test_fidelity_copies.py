"""The fidelity benchmark's per-copy comparison (benchmarks/fidelity/copies.py): measured over
simulated times per copy kind and size, and the pageable staging rate by quarter of the seeds."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from swimlanes.engine import get_preset, simulate
from swimlanes.engine.presets import DevicePreset

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "fidelity"))

from copies import copy_ratios, staging_rates_by_quarter  # noqa: E402
from generate import fidelity_pipeline  # noqa: E402
from measurements import FidelityRun  # noqa: E402

MIB = 1 << 20
#: Seeds whose pipelines have pageable copies of 4 MiB and more, in every quarter of 0..19.
SEEDS = (0, 5, 18, 19)


def _runs(measured_on: DevicePreset) -> list[FidelityRun]:
    """The pipelines of SEEDS with a simulation on ``measured_on`` standing in for the GPU."""
    out = []
    for seed in SEEDS:
        pipeline = fidelity_pipeline(seed)
        tl = simulate(pipeline, measured_on)
        out.append(FidelityRun(f"fid-{seed:04d}", seed, "train", tl, pipeline))
    return out


def _slower_pageable(preset: DevicePreset, factor: float) -> DevicePreset:
    """``preset`` with the host's pageable staging and copy-out rates divided by ``factor``."""
    table = dict(preset.bandwidth_table)
    for key in ("h2d_pageable_host", "d2h_pageable_host"):
        table[key] = [[n, r / factor] for n, r in table[key]]
    return replace(preset, bandwidth_table=table)


def test_a_gpu_that_runs_as_simulated_gives_ratios_of_one() -> None:
    preset = get_preset("h200")
    ratios = copy_ratios(_runs(preset), preset)
    assert {key[1] for key in ratios} == {"pinned", "pageable"}
    for values in ratios.values():
        assert all(d == pytest.approx(1.0) and c == pytest.approx(1.0) for d, c in values)


def test_slower_staging_shows_on_pageable_copies_beyond_one_chunk_only() -> None:
    preset = get_preset("h200")
    ratios = copy_ratios(_runs(_slower_pageable(preset, 2.0)), preset)
    pinned = []
    for (kind, memory, _, nbytes), values in ratios.items():
        device = [d for d, _ in values]
        if memory == "pinned":
            pinned += device
        elif nbytes >= 4 * MIB:
            assert min(device) > 1.5, (kind, nbytes, device)
    # Pinned copies run as modelled, but for what overlaps them shifting (the other
    # direction's slowdown).
    assert sorted(pinned)[len(pinned) // 2] == pytest.approx(1.0, abs=0.01)


def test_staging_rate_by_quarter_is_the_preset_rate_past_the_first_chunk() -> None:
    preset = get_preset("h200")
    for kind in ("h2d", "d2h"):
        quarters = staging_rates_by_quarter(_runs(preset), preset, kind, 4 * MIB)
        assert len(quarters) == 4 and any(quarters)
        for quarter in quarters:
            for gbps in quarter:  # within the rates the preset interpolates from 4 MiB up
                rates = [r for n, r in preset.bandwidth_table[f"{kind}_pageable_host"]]
                assert min(rates) * 0.99 <= gbps <= max(rates) * 1.01
        slower = staging_rates_by_quarter(_runs(_slower_pageable(preset, 2.0)), preset, kind, 0)
        for fast, slow in zip(quarters, slower, strict=True):
            if fast:
                assert max(slow) < 0.6 * min(fast)
