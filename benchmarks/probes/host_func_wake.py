"""When does a host function start? Pipelines that time ``host_func`` ops after different idle
times of the callback thread and with the host thread doing different things meanwhile.

``python benchmarks/probes/host_func_wake.py write DIR`` writes the pipelines;
``swimlanes run DIR/*.json --repeat 3 --out-dir RUNS`` measures them on a GPU;
``python benchmarks/probes/host_func_wake.py report RUNS`` prints, per case, the median lag
from the end of the kernel before each host function to the callback's start.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROUNDS = 16
#: Idle time of the callback thread before each host function (a kernel the host waits for).
IDLE_US = (0, 100, 200, 400, 1000, 3000)
#: What the host thread does once the host function is issued.
AFTER = {
    "launching": [{"op": "kernel", "stream": "t", "blocks": 1, "threads": 32, "block_us": 2}] * 8,
    "recording": [{"op": "event_record", "stream": "t", "event": "c"}] * 24,
    "waiting": [],
    "busy": [{"op": "host", "duration_us": 400.0}],
}


def pipeline(idle_us: int, after: str) -> dict:
    program: list[dict] = []
    for _ in range(ROUNDS):
        if idle_us:
            program += [
                {"op": "kernel", "stream": "s", "blocks": 1, "threads": 32, "block_us": idle_us},
                {"op": "stream_sync", "stream": "s"},
            ]
        program += [
            {
                "op": "kernel",
                "stream": "s",
                "blocks": 1,
                "threads": 32,
                "block_us": 50,
                "label": "before",
            },
            {"op": "host_func", "stream": "s", "duration_us": 1, "label": "probe"},
            *[dict(o) for o in AFTER[after]],
            {"op": "stream_sync", "stream": "s"},
            {"op": "stream_sync", "stream": "t"},
        ]
    return {
        "format": "swimlanes-pipeline",
        "version": 1,
        "name": f"hf-idle{idle_us}-{after}",
        "streams": [{"name": "s"}, {"name": "t", "kind": "non_blocking"}],
        "program": program,
    }


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for after in AFTER:
        for idle in IDLE_US:
            doc = pipeline(idle, after)
            (folder / f"{doc['name']}.json").write_text(json.dumps(doc))


def report(folder: Path) -> None:
    from swimlanes.timeline.formats.io import load_run

    for path in sorted(folder.glob("hf-*.run.json")):
        tl, doc = load_run(path)
        prog = doc.program
        row = {int(ix): k for k, ix in enumerate(tl.index)}
        lags, since = [], []
        last_end = None
        for k, op in enumerate(prog):
            if op.op == "host_func" and k in row and k - 1 in row:
                ready = max(int(tl.end[row[k - 1]]), int(tl.issue_end[row[k]]))
                start = int(tl.start[row[k]])
                lags.append((start - ready) / 1e3)
                if last_end is not None:
                    since.append((ready - last_end) / 1e3)
                last_end = int(tl.end[row[k]])
        print(
            f"{path.name:40s} lag median {np.median(lags):7.1f} us  p10-p90 "
            f"{np.percentile(lags, 10):6.1f}-{np.percentile(lags, 90):6.1f}  "
            f"idle since last callback (median) {np.median(since) if since else 0:7.1f} us"
        )


if __name__ == "__main__":
    {"write": write, "report": report}[sys.argv[1]](Path(sys.argv[2]))
