"""Prediction bands on the command line: ``simulate --band`` and ``compare``'s verdict."""

from __future__ import annotations

import json

import pytest

from swimlanes.cli import main
from swimlanes.resources import example_path, measurements_dir

TRAP = str(example_path("pageable-trap"))


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_simulate_band_json_adds_keys_and_keeps_the_old_ones(capsys) -> None:
    plain = _json(capsys, ["simulate", TRAP, "--json"])
    out = _json(capsys, ["simulate", TRAP, "--json", "--band", "--band-samples", "24"])
    assert {k: out[k] for k in plain if k != "ops"} == {k: plain[k] for k in plain if k != "ops"}
    assert out["makespan_p10_us"] <= out["makespan_p50_us"] <= out["makespan_p90_us"]
    assert out["makespan_p10_us"] < out["makespan_p90_us"]
    # The shipped h200 preset carries the model-error term fitted on the fidelity benchmark.
    assert out["band_samples"] == 24 and out["band_seed"] == 0 and out["band_level_pct"] == 90
    for old, new in zip(plain["ops"], out["ops"], strict=True):
        assert {k: new[k] for k in old} == old
        if old["end_us"] is None:
            assert new["end_p10_us"] is None and new["end_p90_us"] is None
        else:
            assert new["end_p10_us"] <= new["end_p90_us"]
    assert "makespan_p10_us" not in plain and "end_p10_us" not in plain["ops"][0]


def test_simulate_band_is_deterministic_for_a_seed(capsys) -> None:
    argv = ["simulate", TRAP, "--json", "--band", "--band-samples", "16", "--seed", "5"]
    first, second = _json(capsys, argv), _json(capsys, argv)
    other = _json(capsys, [*argv[:-1], "6"])
    assert first == second
    assert first["makespan_p90_us"] != other["makespan_p90_us"]


def test_simulate_band_text_line_says_what_the_interval_is(capsys) -> None:
    assert main(["simulate", TRAP, "--band", "--band-samples", "16"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("makespan ") and "90% likely between" in line
    # A preset without a fitted model error (the built-in a100) says what its interval is.
    assert main(["simulate", TRAP, "--device", "a100", "--band", "--band-samples", "16"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert "80% of sampled runs between" in line and "no fitted model error" in line


def test_bad_band_samples_is_a_clear_error(capsys) -> None:
    assert main(["simulate", TRAP, "--band", "--band-samples", "3"]) == 2
    assert "band samples must be from" in capsys.readouterr().err


def test_compare_says_whether_the_measurement_fell_inside(capsys) -> None:
    run = str(measurements_dir() / "pageable-trap.h200.json")
    out = _json(capsys, ["compare", TRAP, "--measured", run, "--json", "--band-samples", "16"])
    low, high = out["makespan_p10_us"], out["makespan_p90_us"]
    assert out["measured_in_band"] == (low <= out["makespan_measured_us"] <= high)
    assert main(["compare", TRAP, "--measured", run, "--band-samples", "16"]) == 0
    text = capsys.readouterr().out
    verdict = "inside" if out["measured_in_band"] else "outside"
    assert f"the measurement is {verdict}" in text
