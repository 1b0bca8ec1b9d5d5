"""Import speeds: a trace's, and the app's own start-up.

Trace import: synthesise a Kineto-like trace and time ``load_trace`` on it. Prints one JSON
line per run: events, rows, file size, load time, events/s, metrics time and the loading
process's peak memory. The load runs in a fresh child process so that its peak memory is
its own.

Start-up (``--startup N``): N fresh ``swimlanes gui`` processes (offscreen, a fresh config
folder, the default example), each timed from spawning it to the end of the main window's
first paint (the app prints that moment with SWIMLANES_REPORT_FIRST_PAINT=1 and quits).
Prints one JSON line with the median and the range, in seconds, and of main() alone. The
machine these figures come from is usually shared and noisy: compare medians of runs taken
together, never single runs.

    python benchmarks/bench_import.py [--events 1000000] [--gzip]
    python benchmarks/bench_import.py --startup 7
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from swimlanes.timeline.synthetic import write_kineto_trace

STREAMS = 8


def synthesise(path: Path, n_events: int, use_gzip: bool) -> int:
    """Write the synthetic trace; returns its event count."""
    return 4 * write_kineto_trace(path, n_events, streams=STREAMS, use_gzip=use_gzip)


def load(path: Path) -> dict[str, object]:
    from swimlanes.timeline.formats.trace_import import load_trace
    from swimlanes.timeline.metrics import compute_metrics

    t0 = time.perf_counter()
    tl = load_trace(path, progress=lambda _f: None, cancel=lambda: False)
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    compute_metrics(tl)
    metrics_s = time.perf_counter() - t1
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"rows": len(tl), "load_s": round(load_s, 3), "metrics_s": round(metrics_s, 3),
            "peak_rss_mb": round(peak_kb / 1024, 1)}  # fmt: skip


def first_paint_once(config_dir: str) -> tuple[float, float]:
    """Spawn-to-first-paint and main()-to-first-paint seconds of one ``swimlanes gui``."""
    env = dict(
        os.environ,
        QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"),
        SWIMLANES_CONFIG_DIR=config_dir,
        SWIMLANES_REPORT_FIRST_PAINT="1",
    )
    spawned = time.time()
    child = subprocess.run(
        [sys.executable, "-m", "swimlanes", "gui"],
        capture_output=True, text=True, env=env, check=True, timeout=120,
    )  # fmt: skip
    line = json.loads(child.stdout.strip().splitlines()[-1])
    return line["first_paint_wall"] - spawned, line["main_to_paint_s"]


def startup(runs: int) -> dict[str, object]:
    """Start the app ``runs`` times; the median and range of start to first paint."""
    totals, mains = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as config_dir:
            total, in_main = first_paint_once(config_dir)
        totals.append(total)
        mains.append(in_main)
    return {
        "bench": "startup",
        "runs": runs,
        "first_paint_median_s": round(statistics.median(totals), 3),
        "first_paint_range_s": [round(min(totals), 3), round(max(totals), 3)],
        "main_to_paint_median_s": round(statistics.median(mains), 3),
        "main_to_paint_range_s": [round(min(mains), 3), round(max(mains), 3)],
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--gzip", action="store_true", help="write the trace gzipped")
    parser.add_argument(
        "--startup", type=int, metavar="N", help="time N app starts to first paint instead (N >= 5)"
    )
    parser.add_argument("--load", metavar="TRACE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.startup is not None:
        if args.startup < 5:
            parser.error("--startup needs at least 5 runs: one start says little on a busy machine")
        print(json.dumps(startup(args.startup)))
        return
    if args.load:
        print(json.dumps(load(Path(args.load))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("trace.json.gz" if args.gzip else "trace.json")
        events = synthesise(path, args.events, args.gzip)
        child = subprocess.run(
            [sys.executable, __file__, "--load", str(path)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        result = json.loads(child.stdout)
        size = path.stat().st_size
    result = {
        "bench": "import",
        "events": events,
        "gzip": args.gzip,
        "file_mb": round(size / 2**20, 1),
        **result,
        "events_per_s": round(events / result["load_s"]),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
