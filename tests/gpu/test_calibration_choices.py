"""The choices ``swimlanes calibrate`` makes from what its probes recorded (no GPU needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swimlanes.engine import get_preset
from swimlanes.engine.preset_model import FITTED_BY_CALIBRATE
from swimlanes.gpu.calibration_programs import (
    copy_order_of,
    cross_checked_bidirectional,
    queue_choices,
    streams_that_waited,
)

RESOURCES = Path(__file__).resolve().parents[2] / "resources"


@pytest.mark.parametrize(
    ("at_once", "s1_s2_s1", "order"),
    [
        (["s1", "s2", "s3"], ["s1#4", "s1#6", "s2#5"], "stream_fifo"),  # H100, H200 (2026-11-24)
        (["s1", "s2", "s3"], ["s1#4", "s2#5", "s1#6"], "fifo"),
        # Copies readied at once ran out of issue order (one H200 of 2026-11-21, two H100 and
        # two H200 calls of 2026-11-25): their pipelines' copies still ran stream first.
        (["s1", "s3", "s2"], ["s1#4", "s1#6", "s2#5"], "stream_fifo"),
        (["s1", "s3", "s2"], ["s1#4", "s2#5", "s1#6"], "fifo"),
    ],
)
def test_the_copy_order_follows_what_the_probe_saw(at_once, s1_s2_s1, order) -> None:
    probe = {"three_streams_issued_s1_s2_s3_ran": at_once, "issued_s1_s2_s1_ran": s1_s2_s1}
    assert copy_order_of(probe) == order


def _trial(order: str) -> dict:
    at_once, s1_s2_s1 = {
        "stream_fifo": (["s1", "s2", "s3"], ["s1#4", "s1#6", "s2#5"]),
        "fifo": (["s1", "s2", "s3"], ["s1#4", "s2#5", "s1#6"]),
        "stream_fifo, s3 first": (["s1", "s3", "s2"], ["s1#4", "s1#6", "s2#5"]),
    }[order]
    return {"three_streams_issued_s1_s2_s3_ran": at_once, "issued_s1_s2_s1_ran": s1_s2_s1}


@pytest.mark.parametrize(
    ("trials", "order"),
    [
        # One trial of five saw s1's second copy wait: the majority decides.
        (["stream_fifo", "fifo", "stream_fifo", "stream_fifo, s3 first", "fifo"], "stream_fifo"),
        (["fifo", "fifo", "fifo", "stream_fifo", "stream_fifo, s3 first"], "fifo"),
        # A tie goes to what the H100 and H200 hosts measured most often.
        (["stream_fifo, s3 first", "fifo"], "stream_fifo"),
        (["fifo", "stream_fifo"], "stream_fifo"),
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
    # and carries every figure calibrate now writes from the fidelity benchmark's fits
    for key, value in FITTED_BY_CALIBRATE.items():
        assert getattr(shipped, key) == value, key


def test_the_fidelity_report_judges_a_stored_calibration_as_calibrate_would_now() -> None:
    """The report's preset for a stored calibration carries every fitted figure calibrate
    writes today (one table for both: before, each listed them, and could drift)."""
    import sys

    sys.path.insert(0, str(RESOURCES.parent / "benchmarks" / "fidelity"))
    from measurements import load_fidelity_data, preset_as_calibrated_now

    data = load_fidelity_data(RESOURCES / "measurements" / "fidelity-h200-2026-11-24.json.gz")
    assert data.preset.call_cost_factors == {}  # calibrated before the factors were fitted
    now = preset_as_calibrated_now(data)
    for key, value in FITTED_BY_CALIBRATE.items():
        assert getattr(now, key) == value, key


def test_the_bidirectional_fit_is_checked_against_the_pair_of_big_copies() -> None:
    """An H100's calibration (2026-11-25 02:38 UTC): the timing fit's line gave its copies
    111% (H2D) and 109% (D2H) slowdowns against each other; its pair of 256 MiB copies, run at
    once, took 7.310 and 5.622 ms against 5.635 and 9.232 ms alone (its D2H alone was slow).
    The pair sets both figures; an H200's line that missed its pair by 11% is kept."""
    fitted = {
        "bidirectional_slowdown": 1.1138, "bidirectional_overhead_us": 0.0,
        "bidirectional_slowdown_d2h": 1.0903, "bidirectional_overhead_d2h_us": 0.0,
        "copy_engine_gap_us": 1.3,
    }  # fmt: skip
    probe = {"together_ns": [7309634, 5622301], "alone_ns": [5634686, 9232141]}
    checked, report = cross_checked_bidirectional(fitted, probe)
    # The H2D ran alone for its last 1.687 ms after the D2H ended: 3.947 ms of its work ran
    # against the D2H, in 5.622 ms.
    h2d_work = 5634686 - (7309634 - 5622301)
    assert checked["bidirectional_slowdown"] == pytest.approx(5622301 / h2d_work - 1, abs=1e-4)
    assert checked["bidirectional_slowdown_d2h"] == 0.0  # faster together than alone: none
    assert report["h2d"]["fitted"] == 1.1138 and report["h2d"]["line_misses_pair_by"] > 0.3
    assert report["d2h"]["kept"] == 0.0
    assert checked["copy_engine_gap_us"] == 1.3
    h200 = {"bidirectional_slowdown": 0.2337, "bidirectional_overhead_us": 0.0}
    pair = {"together_ns": [5433035, 5246156], "alone_ns": [4906736, 4866064]}
    assert cross_checked_bidirectional(h200, pair)[0] == h200
    # Without the probe (skipped for time), the fit stands.
    assert cross_checked_bidirectional(fitted, None) == (fitted, {})


def test_a_stream_issued_after_the_release_did_not_wait_for_it() -> None:
    """The queue probe's streams whose op started after the held op's release waited for it
    only if they were issued before it; the last streams launched, issued after the long
    kernel ended, say nothing about queues (before, they counted as sharing q0's queue)."""
    release = 300_000
    issued = [20_000 * i for i in range(1, 16)]  # q1..q15, the last five after the release
    started = [t + 5_000 for t in issued]  # each started as soon as it was issued
    assert streams_that_waited(release, issued, started) == []
    held = [release + 1_000 if i == 8 else t for i, t in enumerate(started, start=1)]
    assert streams_that_waited(release, issued, held) == [8]  # q8 shares q0's queue


def _findings(depth: list[int], held: list[int], copies: list[int], issued: int = 15) -> dict:
    def part(waited: list[int]) -> dict:
        return {"streams_that_waited": waited, "streams_issued_before_release": issued}

    return {"copies": part(copies), "depth": part(depth), "held": part(held)}


@pytest.mark.parametrize(
    ("findings", "choices"),
    [
        # H100 and H200 hosts, driver 580 (2026-11-25): streams share queues only when every
        # queue's head is held, else an op takes a free queue.
        (_findings(depth=list(range(8, 16)), held=[], copies=[]),
         {"connections": 8, "copy_queue_per_stream": True, "queue_choice": "free"}),
        # each stream's fixed queue: q8 waits behind q0's held kernel in both parts
        (_findings(depth=list(range(8, 16)), held=[8], copies=[8]),
         {"connections": 8, "copy_queue_per_stream": False, "queue_choice": "stream"}),
        # no stream ever waited: a queue per stream
        (_findings(depth=[], held=[], copies=[]),
         {"connections": 0, "copy_queue_per_stream": False}),
        # too few streams issued before the release to tell: the preset's figures stay
        (_findings(depth=[], held=[], copies=[], issued=5), {}),
    ],
)  # fmt: skip
def test_the_queue_choices_follow_the_streams_that_waited(findings, choices) -> None:
    assert queue_choices(findings, connections=8) == choices


@pytest.mark.parametrize(
    ("connections", "queue_choice", "depth", "held", "choices"),
    [
        (8, "stream", list(range(8, 16)), [8], {"connections": 8, "queue_choice": "stream"}),
        (8, "free", list(range(8, 16)), [], {"connections": 8, "queue_choice": "free"}),
        (0, "stream", [], [], {"connections": 0}),
    ],
)
def test_the_probe_reads_a_simulated_run_of_its_program(
    connections, queue_choice, depth, held, choices
) -> None:
    """The probe's program simulated: with each stream's fixed queue among 8, q8..q15 wait in
    ``depth`` and q8 in ``held`` (it shares q0's queue); with ops taking a free queue while
    there is one, none waits in ``held``; with a queue per stream none waits at all. The
    findings read from its rows, and the choices made from them, give the model back."""
    from dataclasses import replace

    from swimlanes.engine import simulate
    from swimlanes.gpu.calibration_programs import hardware_queue_program, queue_probe_findings
    from swimlanes.model.validate import pipeline_from_dict

    streams, program, rows = hardware_queue_program()
    doc = {"format": "swimlanes-pipeline", "version": 1, "name": "queues", "streams": streams,
           "program": program}  # fmt: skip
    preset = replace(
        get_preset("h200"),
        connections=connections,
        queue_choice=queue_choice,
        copy_queue_per_stream=False,
    )
    tl = simulate(pipeline_from_dict(doc), preset)
    found = queue_probe_findings(tl.issue_end.tolist(), tl.start.tolist(), tl.end.tolist(), rows)
    assert found["depth"]["streams_that_waited"] == depth
    assert found["held"]["streams_that_waited"] == held
    assert found["depth"]["streams_issued_before_release"] == 15
    made = queue_choices(found, connections=8)
    assert {k: made[k] for k in choices} == choices
