"""``swimlanes calibrate``'s host-function probes, through the executor on the CUDA simulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from swimlanes.engine import get_preset
from swimlanes.engine.presets import DevicePreset

CHILD = """
import json, os
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
from swimlanes.gpu.sim_backend import SimulatorBackend
from swimlanes.gpu.calibration_probes import Calibration
c = Calibration(SimulatorBackend(), True, None, None)
print(json.dumps({"fit": c.host_func_latency(), "raw": c.raw}))
"""


def test_calibrate_measures_a_runs_first_host_function_apart() -> None:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    fit, raw = out["fit"], out["raw"]
    assert set(fit) == {"host_func_latency_us", "host_func_cold_latency_us"}
    assert len(raw["host_func_cold_latency_runs_us"]) == 5
    assert fit["host_func_cold_latency_us"] == max(0.0, raw["host_func_cold_latency_us"])
    # What calibrate stores is a valid preset.
    DevicePreset.from_dict({**get_preset("h200").to_dict(), **fit})


def test_calibrate_prints_both_host_function_latencies() -> None:
    from swimlanes.gpu.calibration_summary import summary_lines

    preset = {**get_preset("h200").to_dict(), "host_func_latency_us": 52.0}
    preset["host_func_cold_latency_us"] = 125.5
    lines = summary_lines(preset, {"device": "NVIDIA H200", "backend": "cupti"})
    assert "host function     starts 52.0 us after it may run (a run's first 125.5 us)" in lines
