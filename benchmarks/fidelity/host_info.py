"""Print, as JSON, what the fidelity benchmark records about the machine it measured on: the
GPU (name, driver, clocks), the CPU model, the kernel and the date (UTC)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import UTC, datetime


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _gpu() -> dict[str, str]:
    query = "name,driver_version,memory.total,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return {}
    return dict(zip(query.split(","), (v.strip() for v in out.split(",")), strict=False))


def host_info() -> dict[str, object]:
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": _gpu(),
        "cpu": _cpu_model(),
        "cpus": len(os.sched_getaffinity(0)),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


if __name__ == "__main__":
    print(json.dumps(host_info(), indent=2))
