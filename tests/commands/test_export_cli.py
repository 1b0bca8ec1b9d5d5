"""``swimlanes export``: every format from a pipeline, a saved run, or both; clear errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from swimlanes.cli import main
from swimlanes.engine import simulate
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_path
from swimlanes.timeline.io import save_run

EXAMPLE = example_path("chunked-overlap")


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    """A saved measured run of the example (its simulation, 10 % slower on a later clock)."""
    pipeline = load_pipeline(EXAMPLE)
    tl = simulate(pipeline, "h200").shifted(5_000_000_000)
    for col in (tl.end, tl.issue_end):
        has = col != col.min()
        col[has] += (col[has] - tl.t0) // 10
    tl.source = "measured"
    tl.device = "NVIDIA H200"
    tl.meta["backend"] = "events"
    path = tmp_path / "run.json"
    save_run(path, tl, pipeline)
    return path


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_png_of_a_pipeline_has_the_asked_width(tmp_path, capsys) -> None:
    out = tmp_path / "chart.png"
    assert main(["export", str(EXAMPLE), "-o", str(out), "--width", "900"]) == 0
    assert _png_size(out)[0] == 1800  # drawn at device pixel ratio 2
    assert "wrote" in capsys.readouterr().out


def test_svg_and_pdf(tmp_path) -> None:
    svg, pdf = tmp_path / "c.svg", tmp_path / "c.pdf"
    assert main(["export", str(EXAMPLE), "-o", str(svg)]) == 0
    rects = [e for e in ET.parse(svg).iter() if e.tag.endswith("rect")]
    assert len(rects) > 13  # every op, plus bands and legend
    assert main(["export", str(EXAMPLE), "-o", str(pdf)]) == 0
    assert pdf.read_bytes().startswith(b"%PDF")


def test_trace_json_has_both_runs_and_csv_has_a_row_per_op(tmp_path, run_file) -> None:
    trace, table = tmp_path / "t.json", tmp_path / "t.csv"
    assert main(["export", str(EXAMPLE), "--measured", str(run_file), "-o", str(trace)]) == 0
    doc = json.loads(trace.read_text())
    pids = {e["pid"] for e in doc["traceEvents"] if e.get("ph") == "X"}
    assert len(pids) == 2
    assert main(["export", str(EXAMPLE), "-o", str(table)]) == 0
    rows = list(csv.reader(table.open()))
    assert rows[0][0] == "index" and len(rows) == 1 + len(load_pipeline(EXAMPLE).program)


def test_views_of_a_run_with_its_pipeline(tmp_path, run_file) -> None:
    sizes = {}
    for view in ("simulated", "measured", "both", "auto"):
        out = tmp_path / f"{view}.png"
        assert main(["export", str(run_file), "-o", str(out), "--view", view]) == 0
        sizes[view] = _png_size(out)
    assert sizes["both"][1] > sizes["simulated"][1] * 1.7
    assert sizes["auto"] == sizes["both"]  # the run carries its pipeline, so both are shown


def test_errors_are_one_line_and_exit_2(tmp_path, capsys) -> None:
    cases = [
        (["export", str(EXAMPLE), "-o", str(tmp_path / "x.bmp")], ".png, .svg, .pdf, .json, .csv"),
        (["export", str(tmp_path / "missing.json"), "-o", str(tmp_path / "x.png")], "no such file"),
        (["export", str(EXAMPLE), "-o", str(tmp_path / "x.png"), "--view", "both"], "--measured"),
        (["export", str(EXAMPLE), "-o", str(tmp_path / "x.png"), "--width", "10"], "--width"),
        (["export", str(EXAMPLE), "-o", str(tmp_path / "no" / "x.png")], "no such folder"),
    ]
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    cases.append((["export", str(garbage), "-o", str(tmp_path / "x.png")], "garbage.json"))
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_works_headless_as_a_console_command(tmp_path) -> None:
    out = tmp_path / "c.png"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no DISPLAY: must go offscreen
    proc = subprocess.run(
        [sys.executable, "-m", "swimlanes.cli", "export", str(EXAMPLE), "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert _png_size(out)[0] == 3200


def test_beside_a_measurement_the_simulation_uses_the_measured_gpus_preset(tmp_path) -> None:
    """chunked-overlap prefers `ideal`, but next to an H200 run it must be simulated as an H200."""
    from swimlanes.cli import main as cli_main

    out = tmp_path / "co.svg"
    run = "resources/measurements/chunked-overlap.h200.json"
    assert cli_main(["export", "chunked-overlap", "--measured", run, "-o", str(out)]) == 0
    assert "Simulated — h200" in out.read_text()
    assert cli_main(["export", "chunked-overlap", "--device", "ideal", "--measured", run,
                     "-o", str(out)]) == 0  # fmt: skip
    assert "Simulated — ideal" in out.read_text()
