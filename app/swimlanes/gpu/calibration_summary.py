"""What ``swimlanes calibrate`` prints about a fitted preset and its raw measurements."""

from __future__ import annotations

from typing import Any


def summary_lines(preset: dict[str, Any], raw: dict[str, Any]) -> list[str]:
    """What ``swimlanes calibrate`` prints."""
    costs = preset["issue_cost_us"]
    mem = raw.get("memory", {})
    return [
        f"device            {raw.get('device')} ({preset['sm_count']} SMs), back end {raw.get('backend')}",
        f"pinned  H2D/D2H   {preset['h2d_pinned_gbps']:.1f} / {preset['d2h_pinned_gbps']:.1f} GB/s",
        f"pageable H2D/D2H  {preset['h2d_pageable_gbps']:.1f} / {preset['d2h_pageable_gbps']:.1f} GB/s",
        _both_directions_line(preset),
        f"dependencies      {preset.get('dependency_latency_us', 0):.1f} us across engines, "
        f"{preset.get('kernel_dependency_latency_us', 0):.1f} us kernel to kernel, copy engine "
        f"rest {preset.get('copy_engine_gap_us', 0):.1f} us, copy start "
        f"{preset.get('copy_launch_latency_us', 0):.1f} us after its call",
        f"copy engine order {raw.get('copy_order', {}).get('three_streams_issued_s1_s2_s3_ran')}",
        f"kernel launch     {costs['kernel']:.1f} us host "
        f"({raw.get('issue_cost_uninstrumented_us', {}).get('kernel', 0):.1f} without tracing), "
        f"{preset['kernel_launch_latency_us']:.1f} us to start, "
        f"{raw.get('kernel_overhead_us', 0):.2f} us over its blocks' time",
        "blocking calls    return "
        + ", ".join(
            f"{k.replace('_', ' ')} {v:.1f}" for k, v in raw.get("sync_return_us", {}).items()
        )
        + " us after the device is done",
        f"event record      {costs['event_record']:.1f} us host; copy call {costs['h2d']:.1f} us",
        f"host function     starts {preset.get('host_func_latency_us', 0):.1f} us after it may "
        f"run (a run's first {preset.get('host_func_cold_latency_us', 0):.1f} us)",
        f"device memory     {preset['memory_gbps']:.0f} GB/s (d2d), memset {mem.get('memset_gbps')} GB/s",
        f"FMA kernel        {preset['peak_tflops']:.1f} TFLOP/s",
        _residency_line(raw),
        *_skipped_lines(raw),
        *links_lines(preset, raw),
    ]


def links_lines(preset: dict[str, Any], raw: dict[str, Any]) -> list[str]:
    """The links and NCCL figures (when ``raw`` has a links calibration)."""
    links = raw.get("links")
    if not links:
        return []
    return [
        f"GPUs              {preset['gpus']} joined by {preset.get('link') or 'unknown'} "
        f"(NCCL {links.get('nccl')}, back end {links.get('backend')})",
        f"peer copy         {preset['link_gbps']:.1f} GB/s per pair, "
        f"{preset['link_latency_us']:.1f} us latency",
        f"NCCL              {preset['nccl_bus_gbps']:.1f} GB/s bus bandwidth, "
        f"{preset['nccl_latency_us']:.1f} us per call, {preset['nccl_channels']} channels "
        f"({links.get('nccl_channels_source')})",
        f"links measured in {links.get('seconds')} s; data check "
        f"{'passed' if links.get('data_check_ok') else 'FAILED'}",
    ]


def _residency_line(raw: dict[str, Any]) -> str:
    matches = raw.get("residency_matches_model")
    if matches is None:
        return "residency         not measured"
    return f"residency         {'matches' if matches else 'DIFFERS from'} the block-limit model"


def _skipped_lines(raw: dict[str, Any]) -> list[str]:
    if not raw.get("skipped"):
        return []
    return [
        f"not measured      {', '.join(raw['skipped'])} (past the quick calibration's time "
        f"limit after {raw.get('seconds', 0):g} s; built-in figures kept)"
    ]


def _both_directions_line(preset: dict[str, Any]) -> str:
    h2d = preset["bidirectional_slowdown"]
    d2h = preset.get("bidirectional_slowdown_d2h")
    d2h = h2d if d2h is None else d2h
    fixed = preset.get("bidirectional_overhead_us", 0.0)
    fixed_d2h = preset.get("bidirectional_overhead_d2h_us")
    fixed_d2h = fixed if fixed_d2h is None else fixed_d2h
    return (
        f"both directions   H2D {100 * h2d:.1f}% slower + {fixed:.1f} us, "
        f"D2H {100 * d2h:.1f}% slower + {fixed_d2h:.1f} us"
    )
