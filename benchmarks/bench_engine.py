"""Engine speed: simulate generated pipelines of 1e3..1e6 ops over 8 streams.

Prints one JSON line per size: {"bench": "engine", "device", "ops", "seconds", "ops_per_s",
"cpu_seconds", "peak_mb"} (peak resident memory of the whole process, pipeline included).
Each size runs in its own subprocess so that peak memory (ru_maxrss) is that size's alone.
Usage: bench_engine.py [--device NAME_OR_PRESET_FILE] [--repeat N] [SIZE ...]
(default device h200, which is the calibrated resources/presets/h200.json when that exists;
default sizes 1000 10000 100000 1000000). With --repeat N each size runs N times and its line
is the median run's, plus "runs", "seconds_min" and "seconds_max" (a shared machine's load
makes single runs vary; README quotes such medians).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

SIZES = (1_000, 10_000, 100_000, 1_000_000)
STREAMS = 8


def make_pipeline(n_ops: int):
    """A realistic mix: per stream H2D, kernel, D2H chunks, with events linking streams."""
    from swimlanes.model.document import Op, Pipeline, Stream

    streams = [Stream(f"s{k}") for k in range(STREAMS)]
    program: list[Op] = []
    k = 0
    while len(program) < n_ops:
        s = f"s{k % STREAMS}"
        program.append(Op("h2d", stream=s, bytes=1 << 20))
        program.append(Op("kernel", stream=s, blocks=264, threads=256, duration_us=20.0))
        program.append(Op("event_record", stream=s, event=f"e{k % STREAMS}"))
        program.append(Op("event_wait", stream=f"s{(k + 1) % STREAMS}", event=f"e{k % STREAMS}"))
        program.append(Op("kernel", stream=s, blocks=132, threads=512, duration_us=10.0))
        program.append(Op("d2h", stream=s, bytes=1 << 20))
        k += 1
    return Pipeline(name=f"bench {n_ops}", streams=streams, program=program[:n_ops])


def measure(n_ops: int, device: str = "h200") -> dict:
    import resource
    import time

    from swimlanes.engine import get_preset, simulate

    preset = get_preset(device)
    pipeline = make_pipeline(n_ops)
    t0, c0 = time.perf_counter(), time.process_time()
    timeline = simulate(pipeline, preset)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert len(timeline) == n_ops
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "bench": "engine",
        "device": device,
        "ops": n_ops,
        "seconds": round(seconds, 3),
        "ops_per_s": round(n_ops / seconds),
        "cpu_seconds": round(cpu, 3),  # less disturbed than wall time on a shared machine
        "peak_mb": round(peak_kb / 1024.0, 1),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sizes", nargs="*", type=int, help=f"op counts (default {SIZES})")
    parser.add_argument("--device", default="h200", help="preset name or file (default h200)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per size; report the median (default 1)"
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one size, in this process
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.one:
        print(json.dumps(measure(args.one, args.device)), flush=True)
        return 0
    for n in args.sizes or list(SIZES):
        runs = []
        for _ in range(args.repeat):
            # One process per run, so each size's peak memory is its own.
            out = subprocess.run(
                [sys.executable, __file__, "--device", args.device, "--one", str(n)],
                capture_output=True,
                text=True,
            )
            if out.returncode != 0:
                print(out.stderr, file=sys.stderr)
                return out.returncode
            runs.append(json.loads(out.stdout))
        print(json.dumps(_summary(runs)), flush=True)
    return 0


def _summary(runs: list[dict]) -> dict:
    """One run's line as it is, or the median run's (by time; the lower of the two middle ones
    for an even count) with the spread of all and the highest peak memory."""
    if len(runs) == 1:
        return runs[0]
    by_time = sorted(runs, key=lambda r: r["seconds"])
    median = dict(by_time[(len(by_time) - 1) // 2])
    median.update(
        runs=len(runs),
        seconds_min=by_time[0]["seconds"],
        seconds_max=by_time[-1]["seconds"],
        peak_mb=max(r["peak_mb"] for r in runs),
    )
    return median


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
