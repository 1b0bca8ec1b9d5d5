"""Import speeds: a trace's, and the app's own start-up.

Trace import: synthesise a Kineto-like trace and time ``load_trace`` on it. Prints one JSON
line per run: events, rows, file size, load time, events/s, metrics time and the loading
process's peak memory. The load runs in a fresh child process so that its peak memory is
its own.

Start-up (``--startup N``): N fresh ``swimlanes gui [FILE]`` processes (offscreen, a fresh
config folder; FILE from ``--file``, else the default example), each timed from spawning it to
the end of the main window's first paint, and to the end of the first paint of its charts with
the file in them (the app prints both with SWIMLANES_REPORT_FIRST_PAINT=1 and quits). Prints
one JSON line with the medians and ranges, in seconds, and of main() alone. One untimed start
comes first (it warms the disk cache and writes the bytecode caches), so these are the starts a
user sees after the first one. ``--against APP_DIR`` interleaves as many starts of another
copy of the package (the ``app`` folder of an older checkout, put first on PYTHONPATH) and
reports them beside these: an app that builds its charts before the first paint reports that
paint for both. The machine these figures come from is usually shared and noisy: compare
medians of runs taken together, never single runs.

    python benchmarks/bench_import.py [--events 1000000] [--gzip]
    python benchmarks/bench_import.py --startup 9 [--file PIPELINE] [--against OLD/app]
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


def first_paint_once(
    config_dir: str, file: str | None = None, app_dir: str | None = None
) -> dict[str, float]:
    """Seconds from spawning one ``swimlanes gui [file]`` (of ``app_dir`` when given) to its
    first paint and to its charts' first paint, and of main() to each."""
    env = dict(
        os.environ,
        QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"),
        SWIMLANES_CONFIG_DIR=config_dir,
        SWIMLANES_REPORT_FIRST_PAINT="1",
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # every start but the first reads the caches
    if app_dir:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [app_dir, env.get("PYTHONPATH")]))
    spawned = time.time()
    child = subprocess.run(
        [sys.executable, "-m", "swimlanes", "gui", *([file] if file else [])],
        capture_output=True, text=True, env=env, check=True, timeout=120,
    )  # fmt: skip
    line = json.loads(child.stdout.strip().splitlines()[-1])
    return {
        "first_paint": line["first_paint_wall"] - spawned,
        "main_to_paint": line["main_to_paint_s"],
        # an app that builds its charts before its first paint reports that paint only
        "charts_paint": line.get("charts_paint_wall", line["first_paint_wall"]) - spawned,
        "main_to_charts": line.get("main_to_charts_s", line["main_to_paint_s"]),
    }


def _summary(starts: list[dict[str, float]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key in ("first_paint", "main_to_paint", "charts_paint", "main_to_charts"):
        values = [s[key] for s in starts]
        out[f"{key}_median_s"] = round(statistics.median(values), 3)
        out[f"{key}_range_s"] = [round(min(values), 3), round(max(values), 3)]
    return out


def startup(runs: int, file: str | None = None, against: str | None = None) -> dict[str, object]:
    """Start the app ``runs`` times (and the one in ``against`` as often, in turn); medians
    and ranges of start to first paint and to the charts' first paint."""
    apps = [None, against] if against else [None]
    starts: dict[str | None, list[dict[str, float]]] = {app: [] for app in apps}
    for run in range(runs + 1):
        for app in apps:
            with tempfile.TemporaryDirectory() as config_dir:
                timed = first_paint_once(config_dir, file, app)
            if run:  # the first is the warm-up
                starts[app].append(timed)
    result: dict[str, object] = {"bench": "startup", "runs": runs, "file": file}
    result.update(_summary(starts[None]))
    if against:
        result["against"] = {"app_dir": against, **_summary(starts[against])}
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--gzip", action="store_true", help="write the trace gzipped")
    parser.add_argument(
        "--startup", type=int, metavar="N", help="time N app starts to first paint instead (N >= 5)"
    )
    parser.add_argument("--file", help="with --startup: the pipeline the app opens")
    parser.add_argument(
        "--against", metavar="APP_DIR", help="with --startup: interleave starts of this app folder"
    )
    parser.add_argument("--load", metavar="TRACE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.startup is not None:
        if args.startup < 5:
            parser.error("--startup needs at least 5 runs: one start says little on a busy machine")
        print(json.dumps(startup(args.startup, args.file, args.against)))
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
