"""Do streams share hardware queues (false dependencies)? Pipelines where sharing would show:
N streams, each a 1000 us kernel then a 100 us kernel (one block each), issued stream after
stream. If stream k and k + 8 share a queue (8 connections, CUDA's default), k + 8's long
kernel waits behind k's short one, which waits for k's long one: the span grows by about a
long kernel. With a queue per stream, all long kernels run at once.

``python benchmarks/probes/queue_sharing.py write DIR`` writes the pipelines;
``swimlanes run DIR/*.json --repeat 5 --out-dir RUNS`` measures them on a GPU;
``python benchmarks/probes/queue_sharing.py report RUNS PRESET.json`` prints, per pipeline,
the measured device span and the span simulated on PRESET with ``connections`` 8 (fixed
queues), 0 (a queue per stream) and 8 with ``queue_choice`` "free", as JSON lines.
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


def _kernel(stream: int, block_us: int, label: str) -> dict:
    return {"op": "kernel", "stream": f"s{stream}", "blocks": 1, "threads": 32,
            "block_us": block_us, "label": label}  # fmt: skip


def variants(streams: int = 16) -> dict[str, list[dict]]:
    """Programs that tell apart how streams come to share a queue: ``breadth`` (every long
    kernel issued before any short one: no stream's op waits behind another stream's held op),
    ``longonly`` (one long kernel per stream: nothing held at all), ``held`` (s0's short kernel
    held behind its long one, then one long kernel per other stream: s8 waits if it shares
    s0's queue), ``warm`` (a 2 us kernel on every stream first, all done, then the
    depth-first pattern), ``heldwarm`` (the same first, then ``held``) and ``held7`` (streams
    0 to 6 each a long kernel and a held short one, then a long kernel on each other stream)."""
    depth = [_kernel(s, us, f"{label} {s}") for s in range(streams)
             for us, label in ((LONG_US, "long"), (SHORT_US, "short"))]  # fmt: skip
    return {
        "breadth": [_kernel(s, LONG_US, f"long {s}") for s in range(streams)]
        + [_kernel(s, SHORT_US, f"short {s}") for s in range(streams)],
        "longonly": [_kernel(s, LONG_US, f"long {s}") for s in range(streams)],
        "held": [_kernel(0, 2 * LONG_US, "long 0"), _kernel(0, SHORT_US, "short 0")]
        + [_kernel(s, LONG_US, f"long {s}") for s in range(1, streams)],
        "warm": [_kernel(s, 2, f"warm {s}") for s in range(streams)]
        + [{"op": "device_sync"}]
        + depth,
        # Streams that ran before, then the held pattern: is a stream's queue chosen once,
        # or at each launch (skipping a queue whose head is held)?
        "heldwarm": [_kernel(s, 2, f"warm {s}") for s in range(streams)]
        + [{"op": "device_sync"}]
        + [_kernel(0, 2 * LONG_US, "long 0"), _kernel(0, SHORT_US, "short 0")]
        + [_kernel(s, LONG_US, f"long {s}") for s in range(1, streams)],
        # Every queue's head held but one (streams 0 to 6), then streams 7 to 15.
        "held7": [
            _kernel(s, us, f"{label} {s}")
            for s in range(7)
            for us, label in ((2 * LONG_US, "long"), (SHORT_US, "short"))
        ]
        + [_kernel(s, LONG_US, f"long {s}") for s in range(7, streams)],
    }


def write(folder: Path) -> None:
    from swimlanes.gpu.calibration_programs import hardware_queue_program

    folder.mkdir(parents=True, exist_ok=True)
    for n in STREAM_COUNTS:
        doc = pipeline(n)
        (folder / f"{doc['name']}.json").write_text(json.dumps(doc))
    for name, program in variants().items():
        doc = {"format": "swimlanes-pipeline", "version": 1, "name": f"queues-16-{name}",
               "streams": [{"name": f"s{k}", "kind": "non_blocking"} for k in range(16)],
               "program": [*program, {"op": "device_sync"}]}  # fmt: skip
        (folder / f"{doc['name']}.json").write_text(json.dumps(doc))
    # calibrate's own probe, to compare what it sees with the pipelines above
    streams, program, _ = hardware_queue_program()
    probe = {"format": "swimlanes-pipeline", "version": 1, "name": "queues-calibrate-probe",
             "streams": streams, "program": program}  # fmt: skip
    (folder / "queues-calibrate-probe.json").write_text(json.dumps(probe))


def _span_us(tl) -> float:  # noqa: ANN001 - a Timeline
    device = tl.start >= 0
    return float(tl.end[device].max() - tl.start[device].min()) / 1000.0


def report(folder: Path, preset_path: Path) -> None:
    from swimlanes.engine import get_preset, simulate
    from swimlanes.timeline.formats.io import load_run

    preset = get_preset(str(preset_path))
    for path in sorted(folder.glob("queues-*.run.json")):
        tl, doc = load_run(path)
        if doc.name == "queues-calibrate-probe":
            _report_probe(tl, doc)
            continue
        row = {"pipeline": doc.name, "measured_us": round(_span_us(tl), 1)}
        row["long_kernels_waited"] = _waited(tl, doc)
        for name, changes in (
            ("connections_8", {"connections": 8, "queue_choice": "stream"}),
            ("connections_0", {"connections": 0}),
            ("connections_8_free", {"connections": 8, "queue_choice": "free"}),
        ):
            variant = replace(preset, **changes)
            row[f"simulated_{name}_us"] = round(_span_us(simulate(doc, variant)), 1)
        print(json.dumps(row))


def _waited(tl, doc) -> list[str]:  # noqa: ANN001 - a Timeline and its Pipeline
    """The streams whose long kernel started more than 200 us after its call returned."""
    out = []
    for k, i in enumerate(tl.index.tolist()):
        op = doc.program[i]
        late = int(tl.start[k]) - int(tl.issue_end[k]) > 200_000
        if late and op.op == "kernel" and (op.label or "").startswith("long"):
            out.append(op.stream)
    return out


def _report_probe(tl, doc) -> None:  # noqa: ANN001 - a Timeline and its Pipeline
    """Calibrate's probe: what calibrate reads from it (its findings and choices)."""
    from swimlanes.gpu.calibration_programs import (
        hardware_queue_program,
        queue_choices,
        queue_probe_findings,
    )

    rows = hardware_queue_program()[2]
    at = {int(ix): k for k, ix in enumerate(tl.index)}
    order = [at[i] for i in range(len(doc.program))]
    findings = queue_probe_findings(
        tl.issue_end[order].tolist(), tl.start[order].tolist(), tl.end[order].tolist(), rows
    )
    print(json.dumps({"pipeline": doc.name, "findings": findings,
                      "choices": queue_choices(findings, 8)}))  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        write(Path(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "report":
        report(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        raise SystemExit(__doc__)
