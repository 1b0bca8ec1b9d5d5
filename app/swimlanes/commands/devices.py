"""``swimlanes devices [--json]``: the device presets with their key figures."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any


def device_rows() -> list[dict[str, Any]]:
    """Key figures of every built-in preset (the calibrated h200 one where it is shipped)."""
    from swimlanes.engine import get_preset, preset_names
    from swimlanes.engine.presets import preset_summary

    return [preset_summary(get_preset(name)) for name in preset_names()]


def format_devices(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'name':<9}{'SMs':>5}  {'queues':<20}{'copy engines':<28}"
        f"{'pinned H2D/D2H':>18}{'pageable H2D/D2H':>19}{'launch':>9}"
    )
    lines = [head, "-" * len(head)]
    for d in rows:
        queues = f"{d['hardware_queues']}, {d['connections']}"
        if d["hardware_queues"] == "fermi":
            queues = "fermi, 1 compute"
        elif not isinstance(d["connections"], int):
            queues = "hyperq, per stream"
        lines.append(
            f"{d['name']:<9}{d['sm_count']:>5}  {queues:<20}{d['copy_engines']:<28}"
            f"{d['h2d_pinned_gbps']:>6.1f} /{d['d2h_pinned_gbps']:>5.1f} GB/s"
            f"{d['h2d_pageable_gbps']:>7.1f} /{d['d2h_pageable_gbps']:>5.1f} GB/s"
            f"{d['kernel_launch_cost_us']:>6.1f} us"
        )
    lines += [
        "",
        "queues: hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS); launch: host time of",
        "one kernel launch call",
        "",
    ]
    for d in rows:
        marker = " (calibrated)" if d["calibrated"] else ""
        lines += textwrap.wrap(
            f"{d['name']}{marker}: {d['description']}", width=100, subsequent_indent="    "
        )
    lines += [
        "",
        "Use one with --device NAME, or pass a preset file written by `swimlanes calibrate`.",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    rows = device_rows()
    print(json.dumps(rows, indent=2) if args.json else format_devices(rows))
    return 0
