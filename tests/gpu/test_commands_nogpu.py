"""run / compare / calibrate on a machine without a GPU, and the lazy numba import."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import swimlanes.gpu
from swimlanes.cli import main
from swimlanes.resources import example_path, measurements_dir


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(swimlanes.gpu, "cuda_available", lambda: False)


@pytest.mark.parametrize("argv", [["run"], ["calibrate"]])
def test_gpu_commands_say_no_gpu_and_exit_2(no_gpu, capsys, argv: list[str]) -> None:
    args = [*argv, str(example_path("two-streams"))] if argv == ["run"] else argv
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: no CUDA GPU found: simulation still works"


def test_compare_without_gpu_uses_the_shipped_measurement(no_gpu, capsys) -> None:
    shipped = measurements_dir() / "two-streams.h200.json"
    if not shipped.is_file():
        pytest.skip("the shipped H200 measurements are not in this checkout")
    assert main(["compare", str(example_path("two-streams")), "--json"]) == 0
    out = capsys.readouterr()
    assert "comparing with the shipped measurement two-streams.h200.json" in out.err
    data = json.loads(out.out)
    assert data["device_sim"] == "h200" and "H200" in data["device_measured"]
    assert data["makespan_measured_us"] > 0
    assert abs(data["makespan_error_pct"]) < 10  # the shipped preset predicts its own GPU
    assert [op["index"] for op in data["ops"]] == list(range(7))


def test_compare_without_gpu_or_measurement_is_a_clear_error(no_gpu, tmp_path, capsys) -> None:
    f = tmp_path / "mine.json"
    f.write_text(example_path("two-streams").read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["compare", str(f)]) == 2
    err = capsys.readouterr().err
    assert "no CUDA GPU found: simulation still works; no saved measurement of mine.json" in err


def test_compare_with_a_saved_run_needs_no_gpu(no_gpu, tmp_path, capsys) -> None:
    from swimlanes.engine import simulate
    from swimlanes.model.io import load_pipeline
    from swimlanes.timeline.formats.io import save_run

    pipeline = load_pipeline(example_path("two-streams"))
    fake = simulate(pipeline, "h200")  # a run that matches the model exactly
    fake.source, fake.device = "measured", "NVIDIA H200"
    run_file = tmp_path / "run.json"
    save_run(run_file, fake, pipeline)
    assert main(["compare", str(example_path("two-streams")), "--measured", str(run_file)]) == 0
    out = capsys.readouterr().out
    assert "simulated on h200, measured on NVIDIA H200" in out
    assert "error +0.0%" in out


def test_importing_swimlanes_gpu_does_not_import_numba() -> None:
    code = "import sys, swimlanes.gpu, swimlanes.gpu.executor; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
