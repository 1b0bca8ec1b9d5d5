"""The per-host preset cache and the choice of preset beside a measurement (no GPU, no numba)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swimlanes.engine import get_preset
from swimlanes.gpu.host import HostIdentity
from swimlanes.gpu.preset_cache import (
    RECORD_SUFFIX,
    cache_dir,
    config_dir,
    find_for_host,
    list_cached,
    store,
)
from swimlanes.gpu.preset_choice import choose_preset
from swimlanes.resources import measurements_dir
from swimlanes.timeline.formats.io import load_run

HOST_A = HostIdentity("NVIDIA H200", "580.95.05, CUDA 13.0", "AMD EPYC 9654", "gpu-a")
HOST_B = HostIdentity("NVIDIA H200", "580.95.05, CUDA 13.0", "AMD EPYC 9654", "gpu-b")


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWIMLANES_CONFIG_DIR", str(tmp_path / "config"))


def _preset(sm_count: int = 132) -> dict:
    return {**get_preset("h200").to_dict(), "sm_count": sm_count}


def _h200_run(host: HostIdentity | None = None, calibration: dict | None = None):
    timeline, _ = load_run(measurements_dir() / "two-streams.h200.json")
    timeline.meta.pop("host", None)
    if host is not None:
        timeline.meta["host"] = host.to_dict()
    if calibration is not None:
        timeline.meta["calibration"] = calibration
    return timeline


def test_config_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    assert config_dir() == tmp_path / "config"
    monkeypatch.delenv("SWIMLANES_CONFIG_DIR")
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "swimlanes" / "presets"


def test_a_stored_preset_is_found_for_its_host_only_and_loads_as_a_device_file() -> None:
    entry = store(_preset(130), HOST_A, quick=True)
    assert entry.path.parent == cache_dir() and entry.quick
    assert find_for_host(HOST_A) == entry
    assert find_for_host(HOST_B) is None
    assert find_for_host(HostIdentity(*HOST_A.to_dict().values())) == entry
    preset = get_preset(str(entry.path))  # what --device PATH does
    assert preset.sm_count == 130 and preset.name == entry.id
    assert "gpu-a" in preset.description and "AMD EPYC 9654" in preset.description
    # A new driver is another calibration target.
    newer = HostIdentity(HOST_A.gpu, "590.1", HOST_A.cpu, HOST_A.hostname)
    assert find_for_host(newer) is None


def test_recalibrating_a_host_replaces_its_entry() -> None:
    store(_preset(130), HOST_A)
    store(_preset(131), HOST_A)
    entries, problems = list_cached()
    assert problems == [] and len(entries) == 1
    assert get_preset(str(entries[0].path)).sm_count == 131


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda rec, pre: rec.write_text("{not json"), "corrupt file"),
        (lambda rec, pre: rec.write_text('{"format": "other"}'), "not a swimlanes-calibration"),
        (lambda rec, pre: pre.unlink(), "cannot read preset"),
        (lambda rec, pre: pre.write_text('{"format": "swimlanes-device"}'), "version"),
        (lambda rec, pre: rec.write_bytes(b"\xff\xfe\x00"), "corrupt file"),
    ],
)
def test_a_damaged_entry_is_skipped_with_a_message_naming_it(damage, reason: str) -> None:
    good = store(_preset(), HOST_A)
    bad = store(_preset(), HOST_B)
    damage(cache_dir() / f"{bad.id}{RECORD_SUFFIX}", bad.path)
    entries, problems = list_cached()
    assert entries == [good]
    assert len(problems) == 1 and bad.id in problems[0] and reason in problems[0]


def test_compare_picks_the_preset_of_the_measured_host_without_a_warning() -> None:
    store(_preset(), HOST_B)
    own = store(_preset(), HOST_A)
    choice, problems = choose_preset(_h200_run(HOST_A))
    assert problems == []
    assert choice.device == str(own.path) and choice.source == "measured-host"
    assert choice.warning is None
    assert "gpu-a" in choice.origin and own.date in choice.origin  # where and when
    # The run's own record of its preset wins too.
    choice, _ = choose_preset(_h200_run(HOST_A, own.reference()))
    assert choice.entry == own


def test_another_hosts_preset_is_used_with_a_warning() -> None:
    other = store(_preset(), HOST_B)
    choice, _ = choose_preset(_h200_run(HOST_A))
    assert choice.device == str(other.path) and choice.source == "other-host"
    assert "gpu-a" in choice.warning and "gpu-b" in choice.warning


def test_without_a_cached_preset_the_shipped_one_is_used_with_a_warning() -> None:
    choice, _ = choose_preset(_h200_run(HOST_A))
    assert choice.device == "h200" and choice.source == "shipped"
    assert "2026-11-24" in choice.origin
    assert "shipped h200" in choice.warning and "gpu-a" in choice.warning
    # An old run records no host: it still compares, and says so.
    choice, _ = choose_preset(_h200_run())
    assert choice.device == "h200" and "does not record" in choice.warning


def test_a_requested_device_overrides_the_cache() -> None:
    store(_preset(), HOST_A)
    choice, _ = choose_preset(_h200_run(HOST_A), "ideal")
    assert choice.device == "ideal" and choice.source == "requested" and choice.warning is None


def test_a_gpu_without_any_preset_falls_back_to_h200_and_says_so() -> None:
    timeline = _h200_run(HOST_A)
    timeline.device = "Some Future GPU"
    choice, _ = choose_preset(timeline)
    assert choice.device == "h200" and not choice.same_gpu
    assert "there is no preset of Some Future GPU" in choice.warning


def test_garbled_host_records_are_treated_as_unknown() -> None:
    store(_preset(), HOST_A)
    timeline = _h200_run()
    timeline.meta["host"] = {"gpu": 3}
    timeline.meta["calibration"] = "nonsense"
    choice, _ = choose_preset(timeline)
    assert choice.source == "other-host" and "does not record" in choice.warning
    assert json.dumps(choice.to_json())  # plain JSON for --json


def test_export_beside_a_measurement_simulates_on_the_measured_hosts_preset(tmp_path) -> None:
    from swimlanes.cli import main
    from swimlanes.resources import example_path
    from swimlanes.timeline.formats.io import save_run

    run = _h200_run(HOST_A)
    _, pipeline = load_run(measurements_dir() / "two-streams.h200.json")
    run_file = tmp_path / "run.json"
    save_run(run_file, run, pipeline)
    slow_host = {**_preset(), "issue_cost_us": {**_preset()["issue_cost_us"], "h2d": 900.0}}
    store(slow_host, HOST_A)  # this host's calibration: slow copy calls
    out = tmp_path / "out.json"
    argv = ["export", str(example_path("two-streams")), "--measured", str(run_file), "-o", str(out)]
    assert main(argv) == 0

    def first_h2d_call_us() -> float:
        events = json.loads(out.read_text())["traceEvents"]
        simulated = [e for e in events if e.get("pid") == 1 and e.get("cat") == "issue"]
        return next(e["dur"] for e in simulated if e["args"]["op"] == "h2d")

    # The simulated side is the one the host's own (slower) preset gives, as compare's (the
    # program's first call: at that preset's factor for a thread's first calls).
    first = slow_host.get("call_cost_factors", {}).get("first_calls", 1.0)
    assert first_h2d_call_us() == pytest.approx(900.0 * first, abs=1)
    assert main([*argv[:-2], "--device", "h200", "-o", str(out)]) == 0
    assert first_h2d_call_us() < 50
