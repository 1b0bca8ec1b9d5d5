"""The choices ``swimlanes calibrate`` makes from what its probes recorded (no GPU needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swimlanes.engine import get_preset
from swimlanes.engine.preset_model import FITTED_ROOFLINE
from swimlanes.gpu.calibration_programs import copy_order_of, cross_checked_bidirectional

RESOURCES = Path(__file__).resolve().parents[2] / "resources"


@pytest.mark.parametrize(
    ("at_once", "s1_s2_s1", "order"),
    [
        (["s1", "s2", "s3"], ["s1#4", "s1#6", "s2#5"], "stream_fifo"),  # H100, H200 (2026-11-24)
        (["s1", "s2", "s3"], ["s1#4", "s2#5", "s1#6"], "fifo"),
        (["s1", "s3", "s2"], ["s1#4", "s1#6", "s2#5"], "measured"),  # one H200 (2026-11-21)
    ],
)
def test_the_copy_order_follows_what_the_probe_saw(at_once, s1_s2_s1, order) -> None:
    probe = {"three_streams_issued_s1_s2_s3_ran": at_once, "issued_s1_s2_s1_ran": s1_s2_s1}
    assert copy_order_of(probe) == order


def _trial(order: str) -> dict:
    at_once, s1_s2_s1 = {
        "stream_fifo": (["s1", "s2", "s3"], ["s1#4", "s1#6", "s2#5"]),
        "fifo": (["s1", "s2", "s3"], ["s1#4", "s2#5", "s1#6"]),
        "measured": (["s1", "s3", "s2"], ["s1#4", "s1#6", "s2#5"]),
    }[order]
    return {"three_streams_issued_s1_s2_s3_ran": at_once, "issued_s1_s2_s1_ran": s1_s2_s1}


@pytest.mark.parametrize(
    ("trials", "order"),
    [
        # One trial of five lost the race of copies issued at once: the majority decides.
        (["stream_fifo", "measured", "stream_fifo", "stream_fifo", "fifo"], "stream_fifo"),
        (["measured", "measured", "stream_fifo", "measured", "measured"], "measured"),
        (["fifo", "fifo", "fifo", "stream_fifo", "measured"], "fifo"),
        # A tie goes to what the H100 and H200 hosts measured most often.
        (["measured", "measured", "stream_fifo", "stream_fifo", "fifo"], "stream_fifo"),
        (["measured", "fifo"], "fifo"),
    ],
)
def test_the_copy_order_is_the_majority_of_the_probes_trials(trials, order) -> None:
    probe = {**_trial(trials[0]), "trials": [_trial(t) for t in trials]}
    assert copy_order_of(probe) == order


def test_the_shipped_h200_preset_says_what_its_own_calibration_measured(monkeypatch) -> None:
    monkeypatch.delenv("SWIMLANES_RESOURCES", raising=False)
    raw = json.loads((RESOURCES / "measurements" / "h200-calibration.json").read_text("utf-8"))
    shipped = get_preset("h200")
    assert shipped.copy_order == copy_order_of(raw["copy_order"]) == "stream_fifo"
    for key, value in FITTED_ROOFLINE.items():
        assert getattr(shipped, key) == value


def test_the_bidirectional_fit_is_checked_against_the_pair_of_big_copies() -> None:
    """An H200's calibration (2026-11-25 03:23 UTC): the timing fit's line gave H2D copies a
    23% slowdown against D2H ones; its pair of 256 MiB copies, run at once, took 5.433 and
    5.246 ms against 4.907 and 4.866 ms alone, and the programs' overlapped copies ran about 8%
    slower. The pair sets the H2D figure (the D2H line agrees with it within 3%)."""
    fitted = {
        "bidirectional_slowdown": 0.2337, "bidirectional_overhead_us": 0.0,
        "bidirectional_slowdown_d2h": 0.0937, "bidirectional_overhead_d2h_us": 2.087,
        "copy_engine_gap_us": 1.344,
    }  # fmt: skip
    probe = {"bytes": 256 << 20, "together_ns": [5433035, 5246156], "alone_ns": [4906736, 4866064]}
    checked, report = cross_checked_bidirectional(fitted, probe)
    # The H2D ran alone for its last 0.187 ms: 4.720 ms of its work ran against the D2H.
    assert checked["bidirectional_slowdown"] == pytest.approx(
        5246156 / (4906736 - 186879) - 1, abs=1e-4
    )
    assert 0.10 < checked["bidirectional_slowdown"] < 0.12
    assert report["h2d"]["fitted"] == 0.2337 and report["h2d"]["line_misses_pair_by"] > 0.1
    assert checked["bidirectional_slowdown_d2h"] == 0.0937 and "kept" not in report["d2h"]
    assert {k: v for k, v in checked.items() if k != "bidirectional_slowdown"} == {
        k: v for k, v in fitted.items() if k != "bidirectional_slowdown"
    }
    # Without the probe (skipped for time), the fit stands.
    assert cross_checked_bidirectional(fitted, None) == (fitted, {})
