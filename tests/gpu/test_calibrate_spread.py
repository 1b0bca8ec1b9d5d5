"""``swimlanes calibrate``'s run-to-run spread (gpu.calibrate_spread)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from swimlanes.engine import get_preset
from swimlanes.engine.preset_checks import SPREAD_KEYS
from swimlanes.engine.presets import DevicePreset
from swimlanes.gpu.calibrate_spread import spread_figures, spread_program
from swimlanes.timeline.timeline import NO_TIME, TimelineBuilder

CHILD = """
import json, os
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
from swimlanes.gpu.sim_backend import SimulatorBackend
from swimlanes.gpu.calibrate_spread import measure_spread
print(json.dumps(measure_spread(SimulatorBackend(), quick=True)))
"""


def test_spread_is_measured_through_the_executor_on_the_cuda_simulator() -> None:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    spread = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(spread) == set(SPREAD_KEYS) - {"model_error_low", "model_error_high"}
    assert all(0.0 <= v <= 1.0 for v in spread.values())
    # What calibrate stores is a valid preset.
    DevicePreset.from_dict({**get_preset("h200").to_dict(), "spread": spread})


def _run(scale: float, jitter: float) -> object:
    """A fake measured run of the spread program: kernel calls cost ``scale`` x 10 us, every
    other one ``jitter`` more; copies take 100 us, pageable ones ``scale`` x 1 ms."""
    b = TimelineBuilder(["s"], ["H2D", "D2H", "Compute"])
    t = 0
    for i, op in enumerate(spread_program()):
        cost = round(10_000 * scale * (1 + jitter * (i % 2))) if op["op"] == "kernel" else 5_000
        dur = {"kernel": 20_000, "h2d": 100_000}.get(op["op"], 0)
        if op.get("label") == "pg":
            dur = round(1_000_000 * scale)
        on_device = op["op"] != "device_sync"
        b.add(index=i, kind=op["op"], stream="s" if on_device else None,
              engine={"kernel": "Compute", "h2d": "H2D"}.get(op["op"]), issue_start=t,
              issue_end=t + cost, start=t + cost if on_device else NO_TIME,
              end=t + cost + dur if on_device else NO_TIME, label=op.get("label", op["op"]))  # fmt: skip
        t += cost + dur
    return b.build(source="measured")


def test_steady_runs_give_no_spread_and_varying_runs_do() -> None:
    steady = spread_figures([_run(1.0, 0.0) for _ in range(4)])
    assert steady == dict.fromkeys(steady, 0.0)
    varying = spread_figures([_run(s, 0.2) for s in (0.9, 1.0, 1.1, 1.2)])
    assert varying["host_cost"] > 0.05 and varying["host_scale"] > 0.05
    assert varying["pageable_gbps"] > 0.05 and varying["copy"] == 0.0
