"""Run a scenario script of this folder under numba's CUDA simulator, in a child process.

NUMBA_ENABLE_CUDASIM is read when numba is imported, so the scenarios run in a child process
with it set, and the test process never changes how other tests see CUDA. The script prints
one JSON document of results, which the tests then check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def run_under_simulator(script: str, timeout: float = 300) -> dict[str, Any]:
    """The JSON that ``script`` (a file next to this one) prints under the simulator."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    out = subprocess.run(
        [sys.executable, str(HERE / script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result
