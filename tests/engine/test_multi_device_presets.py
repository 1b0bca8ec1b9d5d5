"""The multi-GPU presets: built from the h200 preset, with link and NCCL figures that the
checks require and bound."""

from __future__ import annotations

from dataclasses import replace

import pytest

from swimlanes.engine import get_preset, preset_names, preset_summary
from swimlanes.engine.presets import multi_preset_names

MULTI = ["2x-h200-nvlink", "4x-h200-nvlink", "8x-h200-nvlink", "2x-h200-pcie"]


def test_multi_gpu_presets_are_listed_apart_from_the_single_gpu_ones(capsys) -> None:
    from swimlanes.cli import main

    assert multi_preset_names() == MULTI
    assert not set(MULTI) & set(preset_names())  # a single-GPU list: tests sample from it
    assert main(["devices"]) == 0
    first_words = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert set(MULTI) <= set(first_words)


@pytest.mark.parametrize("name", MULTI)
def test_each_gpu_is_the_h200_preset(name: str) -> None:
    preset, h200 = get_preset(name), get_preset("h200")
    assert preset.name == name
    assert preset.gpus == int(name[0])
    for key in ("sm_count", "h2d_pinned_gbps", "memory_gbps", "connections", "bandwidth_table"):
        assert getattr(preset, key) == getattr(h200, key)
    assert preset.issue_cost_us["kernel"] == h200.issue_cost_us["kernel"]
    assert preset.issue_cost_us["peer_copy"] > 0 and preset.issue_cost_us["all_reduce"] > 0
    if name == "2x-h200-nvlink":  # calibrated on two H200s: the description says when
        assert "measured by swimlanes calibrate --links on 2026-11-24" in preset.description
        assert preset.link_gbps == 396.2 and preset.nccl_latency_us == 5.0
    else:
        assert "published" in preset.description and "Assumed" in preset.description


def test_nvlink_and_pcie_figures() -> None:
    nvlink, pcie, h200 = (
        get_preset("8x-h200-nvlink"),
        get_preset("2x-h200-pcie"),
        get_preset("h200"),
    )
    assert nvlink.link == "nvlink" and pcie.link == "pcie"
    # One pair's peer copy is below NVLink 4's 450 GB/s per direction; the ring's bus
    # bandwidth below a single pair's copy.
    assert nvlink.nccl_bus_gbps < nvlink.link_gbps < 450
    assert pcie.link_gbps == h200.h2d_pinned_gbps
    assert 20 <= pcie.nccl_bus_gbps <= 25
    assert 16 <= nvlink.nccl_channels <= 32
    summary = preset_summary(nvlink)
    assert summary["gpus"] == 8 and summary["nccl_bus_gbps"] == nvlink.nccl_bus_gbps
    assert "gpus" not in preset_summary(h200)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"gpus": 0}, "gpus: must be from 1"),
        ({"link": "infiniband"}, "link: must be nvlink, pcie"),
        ({"link": ""}, "must say what joins them"),
        ({"link_gbps": 0.0}, "link_gbps: must be a number positive"),
        ({"nccl_bus_gbps": -1.0}, "nccl_bus_gbps"),
        ({"nccl_latency_us": 2e6}, "nccl_latency_us: must be a number from 0"),
        ({"nccl_channels": 500}, r"nccl_channels: must be from 0 to the SM count \(132\)"),
    ],
)
def test_bad_multi_gpu_figures_are_refused(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        replace(get_preset("2x-h200-nvlink"), **changes)


def test_a_multi_gpu_preset_file_round_trips(tmp_path) -> None:
    from swimlanes.engine.presets import DevicePreset

    preset = get_preset("4x-h200-nvlink")
    assert DevicePreset.from_dict(preset.to_dict()) == preset
