"""The links calibration's programs and fits (no GPU needed)."""

from __future__ import annotations

import pytest

from swimlanes.gpu.calibrate_links import (
    apply_links,
    bus_factor,
    collective_program,
    copy_program,
    fit_link,
    fit_nccl,
    nccl_channels_from_log,
)
from swimlanes.model.validate import validate

KB, MB = 1 << 10, 1 << 20


def test_the_programs_are_valid_pipelines_on_the_right_devices() -> None:
    copies = copy_program(2, 1, 0, [4 * KB, 256 * MB])
    assert validate(copies) == []
    assert [op.op for op in copies.program] == ["peer_copy", "stream_sync"] * 2
    assert copies.op_device(copies.program[0]) == "gpu1"
    collective = collective_program(4, "all_gather", [KB])
    assert validate(collective) == []
    assert [collective.op_device(op) for op in collective.program[:4]] == [
        "gpu0", "gpu1", "gpu2", "gpu3",
    ]  # fmt: skip


def test_bus_factor_is_nccl_tests() -> None:
    assert bus_factor("all_reduce", 2) == 1.0
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("all_gather", 8) == pytest.approx(0.875)
    assert bus_factor("all_reduce", 1) == 1.0


def test_fit_link_takes_latency_off_the_large_copies() -> None:
    # 3 us latency, 300 GB/s: t = 3 + bytes / 300e3 us.
    rows = [(b, 3.0 + b / 300e3, 5.0) for b in (4 * KB, 256 * MB, 1 << 30)]
    rows[0] = (4 * KB, 3.0, 5.0)
    fit = fit_link(rows)
    assert fit["link_latency_us"] == 3.0 and fit["link_gbps"] == pytest.approx(300, rel=1e-3)


def test_fit_nccl_gives_bus_bandwidth_per_kind() -> None:
    n, lat, bus = 2, 20.0, 150.0
    per_kind = {
        k: [(b, lat + b * bus_factor(k, n) / (bus * 1e3), 3.0) for b in (KB, 16 * KB, 256 * MB)]
        for k in ("all_reduce", "all_gather")
    }
    fit = fit_nccl(per_kind, n)
    assert fit["nccl_latency_us"] == pytest.approx(lat, abs=0.2)
    assert fit["nccl_bus_gbps"] == pytest.approx(bus, rel=0.01)


def test_channels_come_from_nccls_log() -> None:
    log = "h:1:1 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p"
    assert nccl_channels_from_log(log) == 24
    assert nccl_channels_from_log("NCCL INFO Channel 00/16 : 0 1\nChannel 15/16 : 0 1") == 16
    assert nccl_channels_from_log("nothing here") == 0


def test_apply_links_puts_the_figures_in_a_valid_preset() -> None:
    from swimlanes.engine.presets import get_preset

    fields = {"gpus": 2, "link": "nvlink", "link_gbps": 380.0, "link_latency_us": 3.1,
              "nccl_bus_gbps": 300.0, "nccl_latency_us": 18.0, "nccl_channels": 24,
              "issue_cost_us": {"peer_copy": 4.0}}  # fmt: skip
    out = apply_links(get_preset("h200").to_dict(), fields, "Links measured.")
    assert out["gpus"] == 2 and out["link_gbps"] == 380.0 and out["nccl_channels"] == 24
    assert out["issue_cost_us"]["peer_copy"] == 4.0 and "kernel" in out["issue_cost_us"]
    assert out["description"].endswith("Links measured.")


def test_a_calls_time_is_its_last_ranks_span() -> None:
    from swimlanes.gpu.calibrate_links import per_instance

    # Two ranks per call: the first arrived early and waited 170 us for the second.
    rows = [(KB, 180.0, 20.0), (KB, 5.0, 22.0), (MB, 30.0, 21.0), (MB, 12.0, 23.0)]
    assert per_instance(rows, 2) == [(KB, 5.0, 21.0), (MB, 12.0, 22.0)]


def test_the_h200x2_measurement_refits_to_its_preset() -> None:
    """The links calibration measured on 2 H200s joined by NVLink (tests/gpu/multi): the
    preset holds what the fits give on its own raw tables, and loads as a valid preset."""
    import json
    from pathlib import Path

    from swimlanes.engine.presets import DevicePreset

    data = json.loads((Path(__file__).parent / "multi" / "h200x2-links.json").read_text())
    raw, preset = data["raw"], data["preset"]
    assert data["machine"]["gpus"][0].endswith("NVIDIA H200, 580.159.04, 143771 MiB")
    DevicePreset.from_dict(preset)
    pairs = [fit_link([(b, us, 0.0) for b, us, _ in p["table"]]) for p in raw["pairs"].values()]
    assert preset["link"] == "nvlink" and preset["gpus"] == 2
    gbps = sorted(p["link_gbps"] for p in pairs)
    assert gbps[0] <= preset["link_gbps"] <= gbps[-1]
    per_kind = {k: [(b, us, 0.0) for b, us, _ in rows] for k, rows in raw["collectives"].items()}
    fit = fit_nccl(per_kind, 2)
    assert fit["nccl_bus_gbps"] == preset["nccl_bus_gbps"]
    assert fit["nccl_latency_us"] == preset["nccl_latency_us"]
    assert preset["nccl_channels"] == 24 and raw["data_check_ok"]


def test_calibrate_links_writes_the_measured_links_into_the_preset(
    monkeypatch: pytest.MonkeyPatch, tmp_path, capsys
) -> None:
    """``swimlanes calibrate --links``: the links go into the built-in preset of this GPU
    (no calibration of this host is cached), which is written but not cached."""
    import json

    import swimlanes.gpu
    import swimlanes.gpu.backend
    import swimlanes.gpu.calibrate_links as cl
    from swimlanes.cli import main
    from swimlanes.gpu.plan import DeviceInfo

    class Fake:
        def device_info(self) -> DeviceInfo:
            return DeviceInfo("NVIDIA H200", 132, 2048, 32, 1 << 30, 1 << 30)

        def driver_version(self) -> str:
            return "580.159.04, CUDA 13.0"

    fields = {"gpus": 2, "link": "nvlink", "link_gbps": 396.2, "link_latency_us": 1.9,
              "nccl_bus_gbps": 270.2, "nccl_latency_us": 5.0, "nccl_channels": 24,
              "issue_cost_us": {"all_reduce": 27.2}}  # fmt: skip
    raw = {"date": "2026-11-24 22:41 UTC", "nccl": "2.28.9", "backend": "cupti",
           "seconds": 5.5, "data_check_ok": True, "nccl_channels_source": "NCCL INFO log"}  # fmt: skip
    monkeypatch.setattr(swimlanes.gpu, "cuda_available", lambda: True)
    monkeypatch.setattr(swimlanes.gpu.backend, "make_backend", lambda: Fake())
    monkeypatch.setattr(swimlanes.gpu.backend, "device_count", lambda: 2)
    monkeypatch.setattr(cl, "calibrate_links", lambda **kw: (fields, raw))
    out = tmp_path / "links.json"
    assert main(["calibrate", "--links", "-o", str(out), "--raw", str(tmp_path / "raw.json")]) == 0
    preset = json.loads(out.read_text())
    assert preset["name"] == "h200" and preset["gpus"] == 2 and preset["link_gbps"] == 396.2
    assert preset["issue_cost_us"]["all_reduce"] == 27.2 and "kernel" in preset["issue_cost_us"]
    assert "NCCL 2.28.9" in preset["description"]
    printed = capsys.readouterr()
    assert "peer copy         396.2 GB/s per pair, 1.9 us latency" in printed.out
    assert "written but not cached" in printed.err and "cached for" not in printed.out
    assert json.loads((tmp_path / "raw.json").read_text())["links"]["nccl"] == "2.28.9"
