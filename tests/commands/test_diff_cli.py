"""``swimlanes diff``: two timelines from the command line."""

from __future__ import annotations

import json

import pytest

from swimlanes.cli import main
from swimlanes.resources import measurements_dir


def test_a_simulation_against_its_measurement(capsys: pytest.CaptureFixture[str]) -> None:
    run = measurements_dir() / "pageable-trap.h200.json"
    assert main(["diff", "pageable-trap", str(run), "--device", "h200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matched_by"] == "index"
    assert out["a"]["source"] == "simulated" and out["b"]["source"] == "measured"
    assert len(out["ops"]) == out["a"]["ops"]


def test_the_table_names_both_sides_and_the_delta(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "diff",
        "chunked-overlap",
        "chunked-overlap",
        "--device-a",
        "h200",
        "--device-b",
        "ideal",
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "A: chunked overlap" in text and "(simulated, ideal)" in text
    assert "B - A: -" in text and "matched by index" in text


def test_bad_sides_are_clear_errors(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    assert main(["diff", str(tmp_path / "gone.json"), "two-streams"]) == 2
    err = capsys.readouterr().err
    assert "gone.json" in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        main(["diff", "two-streams", "two-streams", "--match", "colour"])
