"""``swimlanes export``: every format from a pipeline, a saved run, or both; clear errors."""

from __future__ import annotations

import csv
import errno
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from swimlanes.cli import main
from swimlanes.engine import simulate
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_path
from swimlanes.timeline.formats.io import save_run

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


def _leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_a_full_disk_is_exit_2_and_keeps_the_previous_export(
    tmp_path, capsys, monkeypatch, suffix
) -> None:
    out = tmp_path / f"t{suffix}"
    assert main(["export", str(EXAMPLE), "-o", str(out)]) == 0
    before = out.read_bytes()
    capsys.readouterr()
    real_write = os.write

    def fills_up(fd: int, data: bytes) -> int:
        if len(data) > 1000:
            return real_write(fd, bytes(data)[:1000])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", fills_up)
    assert main(["export", str(EXAMPLE), "--device", "h200", "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: cannot write {out}: No space left on device")
    assert "wrote" not in captured.out
    assert out.read_bytes() == before
    assert _leftovers(tmp_path, {out.name}) == []


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_an_image_cut_short_is_exit_2_and_keeps_the_previous_image(
    tmp_path, capsys, monkeypatch, suffix
) -> None:
    from swimlanes.ui import export_image

    out = tmp_path / f"c{suffix}"
    assert main(["export", str(EXAMPLE), "-o", str(out), "--width", "600"]) == 0
    before = out.read_bytes()
    capsys.readouterr()
    write, check = export_image._WRITERS[suffix]

    def cut_short(path: Path, page: object) -> None:
        write(path, page)
        path.write_bytes(path.read_bytes()[:-200])  # what a disk that filled up leaves

    monkeypatch.setitem(export_image._WRITERS, suffix, (cut_short, check))
    assert main(["export", str(EXAMPLE), "-o", str(out), "--width", "900"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: cannot write {out}: ") and "incomplete" in captured.err
    assert "wrote" not in captured.out
    assert out.read_bytes() == before
    assert _leftovers(tmp_path, {out.name}) == []


@pytest.mark.parametrize("suffix", [".png", ".csv"])
def test_an_output_that_is_a_folder_or_under_a_file_is_exit_2(tmp_path, capsys, suffix) -> None:
    folder = tmp_path / f"out{suffix}"
    folder.mkdir()
    a_file = tmp_path / "notes"
    a_file.write_text("x")
    for out, message in ((folder, "it is a folder"), (a_file / f"x{suffix}", "no such folder")):
        assert main(["export", str(EXAMPLE), "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert _leftovers(tmp_path, set()) == sorted(["notes", folder.name])
    assert list(folder.iterdir()) == []


def _limit_file_size() -> None:
    # Writes past 16 KB fail with EFBIG, as on a full disk (and no SIGXFSZ kills the process).
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16_000, resource.RLIM_INFINITY))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE as a full disk")
@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf", ".json", ".csv"])
def test_a_disk_that_fills_up_is_exit_2_in_every_format(tmp_path, suffix) -> None:
    big = example_path("swimming-in-streams")  # every format of it is well over 16 KB
    out = tmp_path / f"out{suffix}"
    out.write_bytes(before := b"the previous export")
    proc = subprocess.run(
        [sys.executable, "-m", "swimlanes.cli", "export", str(big), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"error: cannot write {out}: ")
    assert "wrote" not in proc.stdout and "Traceback" not in proc.stderr
    assert out.read_bytes() == before
    assert _leftovers(tmp_path, {out.name}) == []
