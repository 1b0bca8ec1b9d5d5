"""Device presets: built-ins, JSON files, validation and the summary."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from swimlanes.engine import DevicePreset, get_preset, preset_names, preset_summary
from swimlanes.engine.presets import PRESET_FORMAT, PRESET_VERSION


def test_builtin_presets_are_listed_and_described() -> None:
    names = preset_names()
    assert names[:2] == ["ideal", "h200"]
    assert set(names) >= {"a100", "rtx4090", "c1060", "c2050", "k20c"}
    for name in names:
        preset = get_preset(name)
        assert preset.name == name
        assert len(preset.description) > 40  # says what it teaches


def test_unknown_device_lists_valid_names() -> None:
    with pytest.raises(ValueError, match="unknown device 'h300'.*ideal.*h200"):
        get_preset("h300")


def test_classic_presets_model_their_hardware() -> None:
    c1060, c2050, k20c = get_preset("c1060"), get_preset("c2050"), get_preset("k20c")
    assert c1060.shared_copy_engine and c1060.hardware_queues == "fermi"
    assert c1060.max_resident_kernels == 1
    assert not c2050.shared_copy_engine and c2050.hardware_queues == "fermi"
    assert c2050.completion_signal_delay
    assert k20c.hardware_queues == "hyperq" and k20c.connections == 32
    ideal = get_preset("ideal")
    assert ideal.copy_latency_us == ideal.kernel_launch_latency_us == 0
    assert not any(ideal.issue_cost_us.values())


def test_h200_builtin_figures_from_measurements(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SWIMLANES_RESOURCES", str(tmp_path))  # no calibrated file here
    h200 = get_preset("h200")
    assert h200.sm_count == 132
    size = 256 << 20
    assert 54 < size / h200.copy_ns("h2d", size) < 56
    assert 10 < size / h200.copy_ns("h2d", size, "pageable") < 13
    assert 17 < size / h200.copy_ns("d2h", size, "pageable") < 19
    assert h200.issue_cost_us["kernel"] == pytest.approx(12.0)
    assert h200.issue_cost_us["event_record"] == pytest.approx(1.7)
    assert (h200.priority_greatest, h200.priority_least) == (-5, 0)


def test_preset_file_round_trip(tmp_path: Path) -> None:
    preset = replace(
        get_preset("a100"), name="my-a100", bandwidth_table={"h2d_pinned": [[1e3, 1.0]]}
    )
    path = tmp_path / "my.json"
    path.write_text(json.dumps(preset.to_dict()), encoding="utf-8")
    loaded = get_preset(str(path))
    assert loaded == preset
    assert loaded.to_dict()["format"] == PRESET_FORMAT


def test_partial_preset_file_takes_defaults(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    data = {"format": PRESET_FORMAT, "version": PRESET_VERSION, "name": "x", "sm_count": 10,
            "issue_cost_us": {"kernel": 5}}  # fmt: skip
    path.write_text(json.dumps(data), encoding="utf-8")
    preset = get_preset(path)
    assert preset.sm_count == 10
    assert preset.issue_cost_us["kernel"] == 5.0 and preset.issue_cost_us["h2d"] == 0.0


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"sm_count": 0}, "sm_count"),
        ({"sm_count": "many"}, "sm_count"),
        ({"connections": 33}, "connections"),
        ({"hardware_queues": "kepler"}, "hardware_queues"),
        ({"h2d_pinned_gbps": -1}, "h2d_pinned_gbps"),
        ({"bidirectional_slowdown": True}, "bidirectional_slowdown"),
        ({"issue_cost_us": {"launch": 1}}, "issue_cost_us.launch"),
        ({"bandwidth_table": {"h2d_pinned": [[1, 2, 3]]}}, "bandwidth_table.h2d_pinned"),
        ({"bandwidth_table": {"sideways": []}}, "bandwidth_table.sideways"),
        ({"priority_greatest": 1}, "priority_greatest"),
        ({"kernel_overhead_us": -0.5}, "kernel_overhead_us"),
        ({"dependency_latency_us": "fast"}, "dependency_latency_us"),
        ({"bidirectional_slowdown_d2h": -0.1}, "bidirectional_slowdown_d2h"),
        ({"bidirectional_rest_d2h_us": "x"}, "bidirectional_rest_d2h_us"),
        ({"sync_return_us": {"stream_wait": 1}}, "sync_return_us.stream_wait"),
        ({"sync_return_us": {"event_sync": -1}}, "sync_return_us.event_sync"),
        ({"sync_return_us": [1]}, "sync_return_us"),
        ({"warp_size": 32}, "warp_size"),
        ({"version": 2}, "version"),
    ],
)
def test_bad_preset_values_name_the_key(change: dict, key: str) -> None:
    data = get_preset("h200").to_dict() | change
    with pytest.raises(ValueError, match=f"^{key}: "):
        DevicePreset.from_dict(data)


def test_bad_preset_files_get_clear_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{nope", encoding="utf-8")
    with pytest.raises(ValueError, match="broken.json: not valid JSON"):
        get_preset(broken)
    with pytest.raises(ValueError, match="no preset file"):
        get_preset(tmp_path / "missing.json")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"format": "swimlanes-pipeline"}), encoding="utf-8")
    with pytest.raises(ValueError, match="wrong.json: format"):
        get_preset(wrong)


def test_calibrated_h200_file_wins_over_builtin(tmp_path: Path, monkeypatch) -> None:
    presets = tmp_path / "presets"
    presets.mkdir()
    calibrated = replace(get_preset("h200"), sm_count=130, description="calibrated")
    (presets / "h200.json").write_text(json.dumps(calibrated.to_dict()), encoding="utf-8")
    monkeypatch.setenv("SWIMLANES_RESOURCES", str(tmp_path))
    assert get_preset("h200").sm_count == 130
    assert get_preset("a100").sm_count == 108


def test_summary_has_key_figures_as_plain_json() -> None:
    summary = preset_summary(get_preset("c1060"))
    assert summary["copy_engines"] == "1 shared by both directions"
    assert summary["sm_count"] == 30 and summary["hardware_queues"] == "fermi"
    assert preset_summary(get_preset("ideal"))["connections"] == "one per stream"
    json.dumps(summary)


def test_a_roofline_kernel_with_few_warps_runs_at_its_warps_rate() -> None:
    from swimlanes.engine.presets import DevicePreset

    gpu = DevicePreset(name="g", sm_count=100, peak_tflops=10.0, memory_gbps=1000.0)
    assert gpu.roofline_ns(1e6, 0, blocks=1, threads=32, per_sm=8) == 100  # whole GPU: 10k/ns
    limited = DevicePreset(
        name="w", sm_count=100, peak_tflops=10.0, memory_gbps=1000.0, warp_gflops=20.0,
        warp_gbps=2.0,
    )  # fmt: skip
    # One warp: 20 flops/ns; two blocks of 64 threads on two SMs: 2 x 2 warps x 20.
    assert limited.roofline_ns(1e6, 0, blocks=1, threads=32, per_sm=8) == 50_000
    assert limited.roofline_ns(1e6, 0, blocks=2, threads=64, per_sm=8) == 12_500
    # An SM's compute is capped at its share of the peak (100 flops/ns): 32 warps give 640.
    assert limited.roofline_ns(1e6, 0, blocks=1, threads=1024, per_sm=1) == 10_000
    # A full grid reaches the peak; memory follows the warps the same way, up to memory_gbps.
    assert limited.roofline_ns(1e6, 0, blocks=1000, threads=256, per_sm=8) == 100
    assert limited.roofline_ns(0, 4000, blocks=1, threads=32, per_sm=8) == 2000
    assert limited.roofline_ns(0, 4_000_000, blocks=1000, threads=256, per_sm=8) == 4000


def test_a_streaming_kernel_with_few_elements_per_thread_computes_at_its_tail_rate() -> None:
    from swimlanes.engine.presets import DevicePreset

    gpu = DevicePreset(
        name="g", sm_count=100, peak_tflops=10.0, memory_gbps=1e6, roofline_overlap=0.0,
        roofline_tail_efficiency=0.5,
    )  # fmt: skip
    # 8 MB is 1M elements of 8 bytes (the traffic, 8 ns, adds up with the compute:
    # roofline_overlap 0). 250k threads take four each, all in the four-at-a-time loop; 500k
    # threads take two each, all one by one, at half the rate.
    assert gpu.roofline_ns(1e6, 8_000_000, blocks=1000, threads=250, per_sm=8) == 8 + 100
    assert gpu.roofline_ns(1e6, 8_000_000, blocks=2000, threads=250, per_sm=8) == 8 + 200
    # 256k threads: 232k take four, 24k take three one by one (7.2% of the elements, each at
    # half the rate): 100 x (0.928 + 0.072 / 0.5) = 107.2.
    assert gpu.roofline_ns(1e6, 8_000_000, blocks=1000, threads=256, per_sm=8) == 8 + 107
    # Work without traffic (the FMA kernel) and traffic without work are not slowed.
    assert gpu.roofline_ns(1e6, 0, blocks=1000, threads=256, per_sm=8) == 100
    assert gpu.roofline_ns(0, 8_000_000, blocks=1000, threads=256, per_sm=8) == 8


def test_a_kernel_with_traffic_pays_the_startup_once() -> None:
    from swimlanes.engine.presets import DevicePreset

    gpu = DevicePreset(name="g", peak_tflops=10.0, memory_gbps=1000.0, roofline_startup_us=3.0)
    assert gpu.roofline_ns(0, 4_000_000) == 4000 + 3000
    assert gpu.roofline_ns(1e6, 4_000_000) == 4000 + 3000  # the slower part, then the startup
    assert gpu.roofline_ns(1e6, 0) == 100  # the FMA kernel moves no data
    for name in ("a100", "rtx4090", "ideal", "c1060"):  # built from published figures: none
        assert get_preset(name).roofline_startup_us == 0.0
        assert get_preset(name).roofline_tail_efficiency == 1.0


def test_a_roofline_kernel_with_few_warps_per_sm_hides_less_of_its_traffic() -> None:
    from swimlanes.engine.presets import DevicePreset

    gpu = DevicePreset(
        name="g", sm_count=100, peak_tflops=10.0, memory_gbps=1000.0, max_threads_per_sm=2048,
        roofline_overlap=0.5, roofline_overlap_by_occupancy=True,
    )  # fmt: skip
    # 1e6 flops take 100 ns at the peak, 100_000 bytes 100 ns: full occupancy (8 blocks of
    # 256 threads per SM, 64 warps) hides half of the shorter part.
    assert gpu.roofline_ns(1e6, 100_000, blocks=800, threads=256, per_sm=8) == 150
    # One block of 256 threads per SM (8 warps of 64) hides an eighth of that half.
    assert gpu.roofline_ns(1e6, 100_000, blocks=100, threads=256, per_sm=8) == 194
    # Without the rule the overlap is the same whatever the grid.
    constant = DevicePreset(
        name="c", sm_count=100, peak_tflops=10.0, memory_gbps=1000.0, max_threads_per_sm=2048,
        roofline_overlap=0.5,
    )  # fmt: skip
    assert constant.roofline_ns(1e6, 100_000, blocks=100, threads=256, per_sm=8) == 150
