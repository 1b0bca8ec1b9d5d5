"""Per-host calibration from the command line, under numba's CUDA simulator (child processes:
numba reads NUMBA_ENABLE_CUDASIM when it is first imported). Each test has its own cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from swimlanes.resources import measurements_dir
from swimlanes.timeline.formats.io import load_run, save_run


def _swimlanes(config: Path, *argv: str, gpu: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SWIMLANES_CONFIG_DIR": str(config)}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if gpu:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    cmd = [sys.executable, "-m", "swimlanes", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def _cached(config: Path) -> list[str]:
    folder = config / "presets"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_first_run_calibrates_and_caches_then_later_runs_reuse_it(tmp_path: Path) -> None:
    config, run = tmp_path / "config", tmp_path / "run.json"
    first = _swimlanes(
        config, "run", "two-streams", "--repeat", "1", "--warmup", "0", "-o", str(run)
    )
    assert first.returncode == 0, first.stderr
    assert "calibrating it first" in first.stderr and "cached this host's preset" in first.stderr
    names = _cached(config)
    assert len(names) == 2 and any(n.endswith(".calibration.json") for n in names)
    timeline, _ = load_run(run)
    host, calibration = timeline.meta["host"], timeline.meta["calibration"]
    assert host["gpu"] == timeline.device and host["cpu"] and host["hostname"]
    assert "simulator" in host["driver"]
    assert Path(calibration["path"]).parent == config / "presets"
    assert "preset    " in first.stdout

    again = _swimlanes(config, "run", "two-streams", "--repeat", "1", "--warmup", "0")
    assert again.returncode == 0, again.stderr
    assert "calibrating" not in again.stderr
    assert _cached(config) == names


def test_no_calibrate_skips_it(tmp_path: Path) -> None:
    config = tmp_path / "config"
    r = _swimlanes(config, "run", "two-streams", "--repeat", "1", "--warmup", "0", "--no-calibrate")
    assert r.returncode == 0, r.stderr
    assert "calibrating" not in r.stderr and _cached(config) == []


def test_compare_uses_the_measured_hosts_preset_and_says_where_and_when(tmp_path: Path) -> None:
    config = tmp_path / "config"
    r = _swimlanes(config, "compare", "two-streams", "--repeat", "1", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["preset"]["source"] == "measured-host" and data["preset_warning"] is None
    assert data["preset"]["device"].startswith(str(config))
    assert data["preset"]["cached"]["hostname"] in data["preset"]["origin"]

    r = _swimlanes(config, "compare", "two-streams", "--repeat", "1")
    assert r.returncode == 0, r.stderr
    assert "calibrated (quick)" in r.stdout and "warning" not in r.stderr


def test_compare_warns_about_a_preset_of_another_host(tmp_path: Path) -> None:
    config, run = tmp_path / "config", tmp_path / "run.json"
    r = _swimlanes(config, "run", "two-streams", "--repeat", "1", "--warmup", "0", "-o", str(run))
    assert r.returncode == 0, r.stderr
    timeline, pipeline = load_run(run)
    timeline.meta["host"]["hostname"] = "some-other-gpu-host"
    del timeline.meta["calibration"]
    moved = tmp_path / "moved.json"
    save_run(moved, timeline, pipeline)

    r = _swimlanes(config, "compare", "two-streams", "--measured", str(moved), gpu=False)
    assert r.returncode == 0, r.stderr
    assert "warning: no calibration of the measured host some-other-gpu-host" in r.stderr
    r = _swimlanes(config, "compare", "two-streams", "--measured", str(moved), "--json", gpu=False)
    data = json.loads(r.stdout)
    assert data["preset"]["source"] == "other-host"
    assert "some-other-gpu-host" in data["preset_warning"]


def test_compare_with_an_old_run_falls_back_to_the_shipped_preset_visibly(tmp_path) -> None:
    # An old run: it records neither its host nor its calibration.
    timeline, pipeline = load_run(measurements_dir() / "two-streams.h200.json")
    timeline.meta.pop("host", None)
    timeline.meta.pop("calibration", None)
    shipped = str(tmp_path / "old.json")
    save_run(shipped, timeline, pipeline)
    r = _swimlanes(tmp_path / "config", "compare", "two-streams", "--measured", shipped, gpu=False)
    assert r.returncode == 0, r.stderr
    assert "simulated on h200" in r.stdout
    assert "warning:" in r.stderr and "shipped h200 preset" in r.stderr
    r = _swimlanes(tmp_path / "config", "compare", "two-streams", "--measured", shipped, "--json")
    data = json.loads(r.stdout)
    assert data["preset"]["source"] == "shipped" and "2026-11-24" in data["preset_warning"]
    r = _swimlanes(
        tmp_path / "config", "compare", "two-streams", "--measured", shipped, "--device", "ideal"
    )
    assert "simulated on ideal" in r.stdout and "warning" not in r.stderr


def test_compare_with_a_shipped_run_uses_the_shipped_preset_of_its_host_quietly(tmp_path) -> None:
    shipped = str(measurements_dir() / "two-streams.h200.json")
    r = _swimlanes(tmp_path / "config", "compare", "two-streams", "--measured", shipped, "--json")
    data = json.loads(r.stdout)
    assert data["preset"]["source"] == "shipped" and data["preset_warning"] is None
    assert data["preset"]["origin"].endswith("the measured host")
    assert "warning" not in r.stderr


def test_calibrate_writes_the_file_and_caches_it(tmp_path: Path) -> None:
    config, out = tmp_path / "config", tmp_path / "mine.json"
    r = _swimlanes(config, "calibrate", "--quick", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.is_file() and "cached for host" in r.stdout
    assert len(_cached(config)) == 2
    r = _swimlanes(config, "calibrate", "--quick", "-o", str(tmp_path / "b.json"), "--no-cache")
    assert r.returncode == 0 and len(_cached(config)) == 2


def test_devices_lists_cached_presets_and_skips_a_corrupt_one(tmp_path: Path) -> None:
    config = tmp_path / "config"
    assert (
        _swimlanes(config, "calibrate", "--quick", "-o", str(tmp_path / "p.json")).returncode == 0
    )
    (config / "presets" / "broken.calibration.json").write_text("{oops", encoding="utf-8")

    r = _swimlanes(config, "devices", "--json", gpu=False)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    built_in = [row for row in rows if not row["cached"]]
    cached = [row for row in rows if row["cached"]]
    assert [row["name"] for row in built_in][:2] == ["ideal", "h200"]
    assert len(cached) == 1
    row = cached[0]
    assert row["gpu"] == "numba CUDA simulator" and row["this_host"] and row["quick"]
    for key in ("path", "hostname", "cpu", "driver", "calibrated_at", "sm_count"):
        assert row[key] not in (None, "")
    assert "broken.calibration.json" in r.stderr and "Traceback" not in r.stderr

    r = _swimlanes(config, "devices", gpu=False)
    assert r.returncode == 0
    assert "Calibrated on hosts" in r.stdout and row["path"] in r.stdout
    assert "(this host)" in r.stdout and "broken.calibration.json" in r.stderr


def test_a_time_limit_skips_the_optional_probes_and_says_so(tmp_path: Path) -> None:
    config, out, raw = tmp_path / "config", tmp_path / "p.json", tmp_path / "raw.json"
    r = _swimlanes(
        config, "calibrate", "--quick", "--time-limit", "0", "-o", str(out), "--raw", str(raw)
    )
    assert r.returncode == 0, r.stderr
    skipped = json.loads(raw.read_text())["skipped"]
    assert {"spread", "copy order", "hardware queues", "timing"} <= set(skipped)
    assert "not measured      spread" in r.stdout and "built-in figures kept" in r.stdout
    preset = json.loads(out.read_text())
    assert "not measured within its 0 s limit" in preset["description"]
    # What was measured is still this GPU's; the preset loads and simulates.
    sim = _swimlanes(config, "simulate", "two-streams", "--device", str(out), gpu=False)
    assert sim.returncode == 0, sim.stderr


def test_a_negative_time_limit_is_refused_clearly(tmp_path: Path) -> None:
    r = _swimlanes(tmp_path / "config", "calibrate", "--time-limit", "-1")
    assert r.returncode == 2 and "--time-limit must be 0 or more" in r.stderr
    assert "Traceback" not in r.stderr
