"""Zoomed-out SM occupancy: each pixel column shows its peak, from the peak table when dense."""

from __future__ import annotations

import numpy as np

from swimlanes.ui.gantt.occupancy import PEAK_BLOCK, _visible_steps
from swimlanes.ui.gantt.rows import OccupancyTrack


def _exact_peaks(track: OccupancyTrack, x_map: tuple[float, float]) -> dict[int, float]:
    col = np.floor(track.x * x_map[0] + x_map[1]).astype(np.int64)
    out: dict[int, float] = {}
    for c, f in zip(col.tolist(), track.frac.tolist(), strict=True):
        out[c] = max(out.get(c, 0.0), f)
    return out


def test_a_zoomed_out_view_keeps_every_burst_within_one_pixel_column() -> None:
    rng = np.random.default_rng(3)
    n = 400 * PEAK_BLOCK * 8
    x = np.sort(rng.uniform(0.0, 1000.0, n))
    frac = rng.uniform(0.0, 0.3, n)
    bursts = rng.choice(n, 25, replace=False)
    frac[bursts] = 1.0  # single steps, far narrower than a pixel
    track = OccupancyTrack(row=0, x=x, frac=frac, capacity=132)
    x_map = (0.4, 0.0)  # 1000 time units on 400 pixels: 8 blocks per column
    px, val = _visible_steps(track, (0.0, 1000.0), x_map)
    assert track.peaks is not None  # the peak table was used
    assert len(px) <= 401
    drawn = dict(zip(px.astype(int).tolist(), val.tolist(), strict=True))
    exact = _exact_peaks(track, x_map)
    for b in bursts.tolist():
        column = int(np.floor(x[b] * x_map[0]))
        assert max(drawn.get(c, 0.0) for c in (column - 1, column, column + 1)) == 1.0
    assert max(drawn.values()) == max(exact.values())
    # every column drawn shows a peak some step within one column of it really reached
    for c, v in drawn.items():
        assert v <= max(exact.get(k, 0.0) for k in (c - 1, c, c + 1)) + 1e-12


def test_a_zoomed_in_view_draws_every_step() -> None:
    x = np.arange(10_000, dtype=np.float64)
    frac = (np.arange(10_000) % 7) / 7.0
    track = OccupancyTrack(row=0, x=x, frac=frac, capacity=132)
    px, val = _visible_steps(track, (100.0, 200.0), (10.0, -1000.0))  # 10 pixels per step
    assert track.peaks is None
    assert np.array_equal(val, frac[100:202])  # from the step in force at the left edge
    assert np.array_equal(px, x[100:202] * 10.0 - 1000.0)
