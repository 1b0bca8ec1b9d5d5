"""Do streams share hardware queues (false dependencies)? Pipelines where sharing would show:
N streams, each a 1000 us kernel then a 100 us kernel (one block each), issued stream after
stream. If stream k and k + 8 share a queue (8 connections, CUDA's default), k + 8's long
kernel waits behind k's short one, which waits for k's long one: the span grows by about a
long kernel. With a queue per stream, all long kernels run at once.

``python benchmarks/probes/queue_sharing.py write DIR`` writes the pipelines;
``swimlanes run DIR/*.json --repeat 5 --out-dir RUNS`` measures them on a GPU;
``python benchmarks/probes/queue_sharing.py report RUNS PRESET.json`` prints, per pipeline,
the measured device span and the span simulated on PRESET with ``connections`` 8 and 0 (a
queue per stream), as JSON lines.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

STREAM_COUNTS = (4, 8, 9, 12, 16, 24)
LONG_US, SHORT_US = 1000, 100


def pipeline(streams: int) -> dict:
    program: list[dict] = []
    for s in range(streams):
        for block_us, label in ((LONG_US, "long"), (SHORT_US, "short")):
            program.append({"op": "kernel", "stream": f"s{s}", "blocks": 1, "threads": 32,
                            "block_us": block_us, "label": f"{label} {s}"})  # fmt: skip
    program.append({"op": "device_sync"})
    return {
        "format": "swimlanes-pipeline",
        "version": 1,
        "name": f"queues-{streams}",
        "streams": [{"name": f"s{s}", "kind": "non_blocking"} for s in range(streams)],
        "program": program,
    }


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n in STREAM_COUNTS:
        doc = pipeline(n)
        (folder / f"{doc['name']}.json").write_text(json.dumps(doc))


def _span_us(tl) -> float:  # noqa: ANN001 - a Timeline
    device = tl.start >= 0
    return float(tl.end[device].max() - tl.start[device].min()) / 1000.0


def report(folder: Path, preset_path: Path) -> None:
    from swimlanes.engine import get_preset, simulate
    from swimlanes.timeline.formats.io import load_run

    preset = get_preset(str(preset_path))
    for path in sorted(folder.glob("queues-*.run.json")):
        tl, doc = load_run(path)
        row = {"pipeline": doc.name, "measured_us": round(_span_us(tl), 1)}
        for connections in (8, 0):
            variant = replace(preset, connections=connections)
            row[f"simulated_connections_{connections}_us"] = round(
                _span_us(simulate(doc, variant)), 1
            )
        print(json.dumps(row))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        write(Path(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "report":
        report(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        raise SystemExit(__doc__)
