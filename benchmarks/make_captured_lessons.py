"""Build the shipped captured lessons (resources/captures) from the device captures in
tests/gpu/captures, rebuilt on the preset calibrated in the same device call; run from the
repository root: ``python benchmarks/make_captured_lessons.py`` (``--check``: only say whether
the shipped lessons are what the rebuilding makes of their captures today, exit 1 if not)."""

from __future__ import annotations

import sys
from pathlib import Path

from swimlanes.model.io import pipeline_to_json, save_pipeline
from swimlanes.services.trace_pipeline import TracePipeline, rebuild
from swimlanes.timeline.formats.io import load_timeline_any, save_run

CAP = Path("tests/gpu/captures")
PRESET = str(CAP / "h200-calibrated.json")
LESSONS = {
    "captured-pytorch-streams": (
        "swimming_in_streams-non_blocking",
        "Captured: PyTorch matmuls with non-blocking copies",
        "Seed 002's PyTorch program (resources/programs/swimming_in_streams.py), captured on an "
        "H200 with `swimlanes capture --range non_blocking`: 200 matmuls on one stream, 30 "
        "device-to-host and 30 host-to-device copies with non_blocking=True on two others. The "
        "D2H copies land in pinned memory (PyTorch pins the destination) and overlap the "
        "matmuls; the H2D copies come from pageable CPU tensors, so each one stalls the host "
        "while it is staged. Make the H2D copies pinned (host memory: pinned) and simulate "
        "again to see what pinning the CPU tensors would save.",
    ),
    "captured-pytorch-streams-blocking": (
        "swimming_in_streams-blocking",
        "Captured: PyTorch matmuls with blocking copies",
        "The same program with non_blocking=False (`--range blocking`): each copy is followed "
        "by a stream sync, and the copies to the host land in pageable memory, so the host "
        "waits for every copy before it issues the next. Set the D2H copies' host memory to "
        "pinned and delete the stream syncs: on h200 the simulation drops from about 37 ms to "
        "about 22 ms, the non-blocking version's schedule (captured-pytorch-streams).",
    ),
    "captured-cupy-streams": (
        "cupy_streams-overlap",
        "Captured: a CuPy copy beside kernels on two streams",
        "Seed 003's CuPy streams (resources/programs/cupy_streams.py), captured with `--range "
        "overlap`: a 64 MiB host-to-device copy from pinned memory on one stream while "
        "elementwise kernels run on two others. The copy overlaps the kernels because its host "
        "buffer is pinned; set its host memory to pageable to see the copy stall the host and "
        "the kernels start late.",
    ),
}


def build(root: Path = Path(".")) -> dict[str, TracePipeline]:
    """Each lesson rebuilt from its capture, with its title and description."""
    lessons = {}
    for name, (trace, lesson, text) in LESSONS.items():
        tl, _ = load_timeline_any(root / CAP / f"{trace}.capture.json.gz")
        tl.name = name
        result = rebuild(tl, str(root / PRESET), name=name)
        p = result.rebuilt.pipeline
        p.extra["device"] = "h200"
        p.extra["lesson"] = lesson
        p.extra["description"] = text
        lessons[name] = result
    return lessons


def stale(root: Path = Path(".")) -> list[str]:
    """The shipped lessons that differ from what :func:`build` makes of their captures."""
    return [
        name
        for name, result in build(root).items()
        if (root / "resources" / "captures" / f"{name}.json").read_text(encoding="utf-8")
        != pipeline_to_json(result.rebuilt.pipeline)
    ]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        names = stale()
        print("stale: " + ", ".join(names) if names else "the shipped lessons are up to date")
        return 1 if names else 0
    for name, result in build().items():
        p = result.rebuilt.pipeline
        save_pipeline(p, f"resources/captures/{name}.json")
        save_run(f"resources/measurements/{name}.h200.json", result.rebuilt.measured, p)
        print(name, len(p.program), f"{100 * (result.replay_error or 0.0):+.2f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
