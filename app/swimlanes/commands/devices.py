"""``swimlanes devices [--json]``: the device presets with their key figures.

The built-in presets come first, then the presets calibrated on hosts and cached in the user's
config folder (swimlanes.gpu.preset_cache), newest first. Every row has ``cached``: false for
built-in ones; a cached row adds ``id``, ``path``, ``gpu``, ``hostname``, ``cpu``, ``driver``,
``calibrated_at``, ``quick`` and ``this_host``. Cache files that cannot be read are named on
stderr and skipped.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any


def device_rows() -> list[dict[str, Any]]:
    """Key figures of every built-in preset (the calibrated h200 one where it is shipped)."""
    from swimlanes.engine import get_preset, preset_names
    from swimlanes.engine.presets import multi_preset_names, preset_summary

    names = [*preset_names(), *multi_preset_names()]
    return [{**preset_summary(get_preset(name)), "cached": False} for name in names]


def cached_rows() -> tuple[list[dict[str, Any]], list[str]]:
    """Key figures and origin of every cached calibration, and the messages of skipped ones."""
    from swimlanes.engine.presets import load_preset, preset_summary
    from swimlanes.gpu.preset_cache import list_cached

    entries, problems = list_cached()
    here = _this_host_name()
    rows = []
    for entry in entries:
        try:
            summary = preset_summary(load_preset(entry.path))
        except ValueError as err:  # changed since it was listed
            problems.append(f"skipped cached preset {entry.path}: {err}")
            continue
        rows.append(
            {**summary, "cached": True, **entry.to_json(), "this_host": entry.host.hostname == here}
        )
    return rows, problems


def _this_host_name() -> str:
    import socket

    return socket.gethostname()


def format_devices(rows: list[dict[str, Any]]) -> str:
    w = max([9, *(len(d["name"]) + 1 for d in rows)])
    head = (
        f"{'name':<{w}}{'SMs':>5}  {'queues':<20}{'copy engines':<28}"
        f"{'pinned H2D/D2H':>18}{'pageable H2D/D2H':>19}{'launch':>9}"
    )
    lines = [head, "-" * len(head)]
    for d in rows:
        queues = f"{d['hardware_queues']}, {d['connections']}"
        if d.get("queue_choice") == "free":
            queues += ", free"
        if d["hardware_queues"] == "fermi":
            queues = "fermi, 1 compute"
        elif not isinstance(d["connections"], int):
            queues = "hyperq, per stream"
        lines.append(
            f"{d['name']:<{w}}{d['sm_count']:>5}  {queues:<20}{d['copy_engines']:<28}"
            f"{d['h2d_pinned_gbps']:>6.1f} /{d['d2h_pinned_gbps']:>5.1f} GB/s"
            f"{d['h2d_pageable_gbps']:>7.1f} /{d['d2h_pageable_gbps']:>5.1f} GB/s"
            f"{d['kernel_launch_cost_us']:>6.1f} us"
        )
    lines += [
        "",
        "queues: hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS; free: an op takes a queue",
        "that holds nothing while there is one); launch: host time of one kernel launch call",
        "",
    ]
    for d in rows:
        marker = " (calibrated)" if d["calibrated"] else ""
        if d.get("gpus", 1) > 1:  # a multi-GPU preset: its link and NCCL figures
            marker += (
                f" ({d['gpus']} GPUs, {d['link']} {d['link_gbps']:g} GB/s per pair, NCCL bus "
                f"{d['nccl_bus_gbps']:g} GB/s, {d['nccl_channels']} SMs per call)"
            )
        lines += textwrap.wrap(
            f"{d['name']}{marker}: {d['description']}", width=100, subsequent_indent="    "
        )
    lines += [
        "",
        "Use one with --device NAME, or pass a preset file written by `swimlanes calibrate`.",
    ]
    return "\n".join(lines)


def format_cached(rows: list[dict[str, Any]]) -> str:
    """The cached calibrations: preset file, GPU, host, CPU, driver, when."""
    from swimlanes.gpu.preset_cache import cache_dir

    if not rows:
        return (
            f"No presets calibrated on this machine's hosts yet (cache: {cache_dir()}); the "
            "first GPU run calibrates one, or run `swimlanes calibrate`."
        )
    lines = [f"Calibrated on hosts (cache: {cache_dir()}), newest first:"]
    for d in rows:
        mark = " (this host)" if d["this_host"] else ""
        quick = ", quick" if d["quick"] else ""
        lines += [
            f"  {d['id']}{mark}",
            f"    {d['gpu']} on host {d['hostname']}; CPU {d['cpu']}; driver {d['driver']}",
            f"    calibrated {d['calibrated_at']}{quick}; --device {d['path']}",
        ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import sys

    rows = device_rows()
    cached, problems = cached_rows()
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows + cached, indent=2))
    else:
        print(format_devices(rows))
        print()
        print(format_cached(cached))
    return 0
