"""``swimlanes capture --range`` on NVTX ranges the program marks itself."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from swimlanes.gpu.capture import MARKER_END, MARKER_START, nvtx_regions

ROOT = Path(__file__).resolve().parents[2]


def _marker(flags: int, t: int, ident: int, name: str = "") -> dict:
    return {"flags": flags, "timestamp": t, "id": ident, "name": name}


def test_nvtx_markers_pair_into_regions_by_id() -> None:
    markers = [
        _marker(MARKER_START, 10, 1, "step"),
        _marker(MARKER_START, 12, 2, "inner"),  # nested: a push inside a push
        _marker(MARKER_END, 15, 2),
        _marker(MARKER_END, 20, 1),
        _marker(MARKER_START, 30, 3, "step"),
        _marker(MARKER_END, 40, 3),
        _marker(MARKER_START, 50, 4, "step"),  # never closed: left out
        _marker(1, 55, 5, "instant"),  # an instantaneous marker is no range
    ]
    assert nvtx_regions(markers) == [("step", 10, 20), ("inner", 12, 15), ("step", 30, 40)]


@pytest.mark.gpu
def test_capture_keeps_the_nvtx_range_asked_for(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("cupti")
    trace = tmp_path / "steps.capture.json.gz"
    cmd = [sys.executable, "-m", "swimlanes", "capture", "--range", "step:2",
           "-o", str(tmp_path / "steps.run.json"), "--trace", str(trace),
           "--", sys.executable, str(ROOT / "resources/programs/nvtx_steps.py")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    names = [e["name"] for e in events if e["cat"] == "kernel"]
    # step 2: two multiplies, then the sum's reduction (steps 1 and 3 have one and three)
    assert len([n for n in names if "reduce" not in n.lower()]) == 2, names
    assert any("reduce" in n.lower() for n in names), names
    # the rebuilt pipeline's ops carry the range they were called in
    with open(tmp_path / "steps.run.json") as f:
        program = json.load(f)["pipeline"]["program"]
    kernels = [op for op in program if op["op"] == "kernel"]
    assert kernels and all(op["label"].startswith("step: ") for op in kernels), kernels


def test_a_cupti_marker_record_is_read_with_cupti_pythons_field_names() -> None:
    """cupti-python 13's ActivityMarker2 has ``flags_`` (no ``flags``) and a str name."""
    from enum import IntEnum
    from types import SimpleNamespace

    from swimlanes.gpu.capture import _fields

    kinds = IntEnum("ActivityKind", "RUNTIME DRIVER KERNEL CONCURRENT_KERNEL MEMCPY MEMSET "
                    "SYNCHRONIZATION CUDA_EVENT STREAM MARKER")  # fmt: skip
    cupti = SimpleNamespace(ActivityKind=kinds)
    record = SimpleNamespace(kind=kinds.MARKER, flags_=MARKER_START, timestamp=7, id=3,
                             name="step", domain=None)  # fmt: skip
    assert _fields(cupti, record) == (
        "marker",
        {"flags": MARKER_START, "timestamp": 7, "id": 3, "name": "step"},
    )


@pytest.mark.gpu
def test_capture_runs_code_given_with_c(tmp_path: Path) -> None:
    """``-- python -c CODE``: the snippet's copy and kernel come back as a pipeline."""
    pytest.importorskip("torch")
    pytest.importorskip("cupti")
    code = (
        "import torch; x = torch.ones(1 << 20, device='cuda'); y = (x * 2).cpu(); "
        "torch.cuda.synchronize()"
    )
    cmd = [sys.executable, "-m", "swimlanes", "capture", "-o", str(tmp_path / "program.run.json"),
           "--trace", str(tmp_path / "program.capture.json.gz"),
           "--", "python", "-c", code]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(tmp_path / "program.run.json") as f:
        program = json.load(f)["pipeline"]["program"]
    kinds = [op["op"] for op in program]
    assert "kernel" in kinds and "d2h" in kinds, kinds
