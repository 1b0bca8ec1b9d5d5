"""Engine speed: simulate generated pipelines of 1e3..1e6 ops over 8 streams.

Cases (``--case``, default ``repetitive``; ``all`` runs the three):

- ``repetitive``: the original benchmark, a per-stream H2D, kernel, D2H pattern with events
  linking streams (few op shapes, so the planner works out each shape once). One JSON line per
  size: {"bench": "engine", "device", "ops", "seconds", "ops_per_s", "cpu_seconds",
  "peak_mb"} (peak resident memory of the whole process, pipeline included), plus "case".
- ``random``: a seeded random mix over 8 streams of every op kind the engine supports, every op
  of its own shape (as captured programs are). Its lines add "simpy_cpu_seconds" and
  "cpu_ratio_vs_simpy": a bare SimPy model of the same pipeline (one process per stream, the
  copy engines and the SMs as Resources; far simpler semantics: a yardstick) timed in the same
  process, interleaved with the engine.
- ``cli``: ``swimlanes simulate FILE --json`` end to end, timed as a subprocess on a written
  random-mix file: {"bench": "cli", "ops", "seconds", "ops_per_s", "cpu_seconds"}.

Each engine size runs in its own subprocess so that peak memory (ru_maxrss) is that size's
alone. Usage: bench_engine.py [--case NAME] [--device NAME_OR_PRESET_FILE] [--repeat N]
[SIZE ...] (default device h200, which is the calibrated resources/presets/h200.json when that
exists; default sizes 1000 10000 100000 1000000). With --repeat N each size runs N times and
its line is the median run's, plus "runs", "seconds_min" and "seconds_max" (a shared machine's
load makes single runs vary; README quotes such medians).

``--baseline APP_DIR`` (the ``app`` folder of another checkout, e.g. from ``git archive``)
compares that code with this one (or with ``--this APP_DIR``): engine runs interleaved in one process (both module sets
loaded side by side) and CLI runs interleaved as subprocesses, printing per size the ratio
baseline / this of CPU time, median and range over ``--repeat`` rounds (at least 5 is sensible).
Figures measured with it, and where the time goes: benchmarks/results/engine-2-core.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

SIZES = (1_000, 10_000, 100_000, 1_000_000)
STREAMS = 8
CASES = ("repetitive", "random", "cli")


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


def make_random_pipeline(n_ops: int, seed: int = 0, document: Any = None):
    """The random mix: ``n_ops`` ops over 8 streams, every op kind, each op of its own shape
    (sizes, grids and times drawn from wide ranges). Synchronising calls are rare (about one op
    in 60), as in programs that keep the GPU busy. ``document`` is the module whose Op,
    Pipeline and Stream to use (default: this checkout's)."""
    if document is None:
        from swimlanes.model import document
    Op, Pipeline, Stream = document.Op, document.Pipeline, document.Stream
    rng = random.Random(seed)
    kinds = ("blocking", "blocking", "non_blocking", "blocking")
    streams = [Stream(f"s{k}", kinds[k % 4], -1 if k % 3 == 0 else 0) for k in range(STREAMS)]
    names = [s.name for s in streams]
    program: list = []
    recorded: list[str] = []
    mallocs = 0
    while len(program) < n_ops:
        s = rng.choice(names)
        roll = rng.random()
        if roll < 0.30:  # copies to and from the host, of many sizes
            op = Op(
                "h2d" if roll < 0.16 else "d2h",
                stream=s,
                bytes=rng.randrange(1, 1 << 13) * 1024,  # 1 KiB .. 8 MiB
                host_memory="pageable" if rng.random() < 0.15 else None,
                is_async=False if rng.random() < 0.02 else None,
            )
        elif roll < 0.34:
            op = Op("d2d", stream=s, bytes=rng.randrange(1, 1 << 14) * 1024)
        elif roll < 0.38:  # a synchronous memset now and then (device-wide synchronisation)
            sync = rng.random() < 0.02
            op = Op("memset", stream=s, bytes=rng.randrange(1, 1 << 14) * 1024)
            op.is_async = False if sync else None
        elif roll < 0.70:
            op = _random_kernel(Op, rng, s)
        elif roll < 0.79:
            event = f"e{rng.randrange(64)}"
            recorded.append(event)
            op = Op("event_record", stream=s, event=event)
        elif roll < 0.88 and recorded:
            op = Op("event_wait", stream=s, event=rng.choice(recorded[-16:]))
        elif roll < 0.91:
            op = Op("host", duration_us=round(rng.uniform(1.0, 50.0), 3))
        elif roll < 0.94:
            op = Op("host_func", stream=s, duration_us=round(rng.uniform(1.0, 40.0), 3))
        elif roll < 0.95:  # the legacy default stream
            op = Op("kernel", blocks=rng.randint(1, 64), threads=64)
            op.duration_us = round(rng.uniform(1.0, 20.0), 3)
        elif roll < 0.96:
            op = Op("stream_sync", stream=s)
        elif roll < 0.97 and recorded:
            op = Op("event_sync", event=rng.choice(recorded[-16:]))
        elif roll < 0.972:
            op = Op("device_sync")
        elif roll < 0.974 and mallocs < 64:
            mallocs += 1
            program.append(Op("malloc", bytes=rng.randrange(1, 1 << 12) * 4096))
            op = Op("free")
        else:
            op = _random_kernel(Op, rng, s)
        program.append(op)
    return Pipeline(f"random mix {n_ops} (seed {seed})", streams, program[:n_ops])


def _random_kernel(Op: Any, rng: random.Random, stream: str) -> Any:
    """A kernel of a random grid in one of the three timing forms."""
    # Grids log-uniform from 1 to 4096 blocks: most kernels of real programs are small.
    blocks = int(2.0 ** rng.uniform(0.0, 12.0))
    op = Op("kernel", stream=stream, blocks=blocks, threads=32 * rng.randint(1, 32))
    form = rng.random()
    if form < 0.6:
        op.duration_us = round(rng.uniform(1.0, 200.0), 3)
    elif form < 0.85:
        op.block_us = round(rng.uniform(0.5, 20.0), 3)
    else:
        op.flops = float(rng.randrange(1, 1 << 20) * 4096)
        op.bytes = rng.randrange(1, 1 << 14) * 1024
    return op


# -- the SimPy yardstick ----------------------------------------------------------------------
def simpy_model(pipeline: Any) -> int:
    """A bare SimPy model of ``pipeline``: the host issues calls in order (a fixed cost each),
    one process per stream runs its ops in order, the two copy engines are Resources of one,
    the SMs a Resource of 16 concurrent kernels (d2d and memsets too), events and syncs are
    SimPy events. Times in ns; returns the makespan. Simpler semantics than the engine (no
    hardware queues, block scheduler, latencies or bidirectional slowdown): a yardstick."""
    import simpy

    env = simpy.Environment()
    h2d, d2h, sms = simpy.Resource(env, 1), simpy.Resource(env, 1), simpy.Resource(env, 16)
    inbox: dict[str | None, Any] = {}
    last_done: dict[str | None, Any] = {}
    records: dict[str, Any] = {}

    def duration(op: Any) -> int:
        if op.duration_us is not None:
            return round(op.duration_us * 1000.0)
        if op.op in ("h2d", "d2h"):
            gbps = 12.0 if op.host_memory == "pageable" else 55.0
            return round(2000.0 + (op.bytes or 0) / gbps)
        if op.op in ("d2d", "memset"):
            return round(2.0 * (op.bytes or 0) / 4800.0)
        if op.op == "kernel":
            waves = -(-(op.blocks or 1) // (132 * max(1, 2048 // (op.threads or 256))))
            if op.block_us is not None:
                return round(op.block_us * 1000.0) * waves
            return max(1, round(max((op.flops or 0.0) / 67_000.0, (op.bytes or 0) / 4800.0)))
        return 0

    def stream_process(store: Any) -> Any:
        while True:
            op, wait_for, done = yield store.get()
            if op.op == "event_wait":
                if wait_for is not None:
                    yield wait_for
            elif op.op in ("h2d", "d2h", "d2d", "memset", "kernel"):
                engine = h2d if op.op == "h2d" else d2h if op.op == "d2h" else sms
                with engine.request() as req:
                    yield req
                    yield env.timeout(duration(op))
            elif op.op == "host_func":
                yield env.timeout(duration(op))
            done.succeed()

    def host() -> Any:
        for op in pipeline.program:
            yield env.timeout(5000)  # the call's cost
            name = op.op
            if name in ("stream_sync", "device_sync", "free"):
                targets = (
                    [last_done.get(op.stream)] if name == "stream_sync" else last_done.values()
                )
                yield env.all_of([e for e in targets if e is not None])
            elif name == "event_sync":
                if op.event in records:
                    yield records[op.event]
            elif name == "host":
                yield env.timeout(duration(op))
            elif name != "malloc":
                stream = op.stream or "default"
                store = inbox.get(stream)
                if store is None:
                    store = inbox[stream] = simpy.Store(env)
                    env.process(stream_process(store))
                done = env.event()
                wait_for = records.get(op.event) if name == "event_wait" else None
                if name == "event_record":
                    records[op.event] = done
                last_done[stream] = done
                store.put((op, wait_for, done))
                if op.is_async is False:
                    yield done
        yield env.all_of(list(last_done.values()))

    env.process(host())
    env.run()
    return int(env.now)


# -- measurements -----------------------------------------------------------------------------
def measure(n_ops: int, device: str = "h200", case: str = "repetitive") -> dict:
    from swimlanes.engine import get_preset, simulate

    preset = get_preset(device)
    pipeline = make_pipeline(n_ops) if case == "repetitive" else make_random_pipeline(n_ops)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), time.process_time()
    timeline = simulate(pipeline, preset)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert len(timeline) == n_ops
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    line = {
        "bench": "engine",
        "device": device,
        "ops": n_ops,
        "seconds": round(seconds, 3),
        "ops_per_s": round(n_ops / seconds),
        "cpu_seconds": round(cpu, 3),  # less disturbed than wall time on a shared machine
        "peak_mb": round(peak_kb / 1024.0, 1),
        "case": case,
        # What the simulation added to the peak (the pipeline itself excluded).
        "engine_peak_mb": round((peak_kb - rss_before) / 1024.0, 1),
    }
    if case == "random":
        del timeline
        c0 = time.process_time()
        simpy_model(pipeline)
        simpy_cpu = time.process_time() - c0
        line["simpy_cpu_seconds"] = round(simpy_cpu, 3)
        line["cpu_ratio_vs_simpy"] = round(cpu / simpy_cpu, 3)
    return line


def cli_command(path: str) -> list[str]:
    """``swimlanes simulate PATH --json`` as run from this interpreter's environment."""
    code = "import sys; from swimlanes.cli import main; sys.exit(main())"
    return [sys.executable, "-c", code, "simulate", path, "--json"]


def time_cli(path: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one ``swimlanes simulate --json`` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cli_command(path), check=True, stdout=subprocess.DEVNULL, env=env)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu


def measure_cli(n_ops: int, folder: str) -> dict:
    path = write_random_file(n_ops, folder)
    seconds, cpu = time_cli(path)
    return {
        "bench": "cli",
        "case": "random",
        "ops": n_ops,
        "seconds": round(seconds, 3),
        "ops_per_s": round(n_ops / seconds),
        "cpu_seconds": round(cpu, 3),
    }


def write_random_file(n_ops: int, folder: str) -> str:
    from swimlanes.model.io import save_pipeline

    path = os.path.join(folder, f"random-{n_ops}.json")
    if not os.path.exists(path):
        save_pipeline(make_random_pipeline(n_ops), path)
    return path


# -- baseline comparison ------------------------------------------------------------------------
def load_variant(app_dir: str | None) -> dict[str, Any]:
    """The swimlanes modules of ``app_dir`` (None: this checkout's), imported side by side
    with any other variant: each variant's modules are swapped into sys.modules while it runs
    (see :func:`use_variant`), so its lazy imports find its own modules."""
    saved = {k: v for k, v in sys.modules.items() if k == "swimlanes" or k.startswith("swimlanes.")}
    for k in saved:
        del sys.modules[k]
    if app_dir:
        sys.path.insert(0, app_dir)
    try:
        import swimlanes.engine
        import swimlanes.model.document
        import swimlanes.model.io  # noqa: F401 - part of the variant
        import swimlanes.timeline.timeline  # noqa: F401
    finally:
        if app_dir:
            sys.path.remove(app_dir)
    mods = {k: v for k, v in sys.modules.items() if k == "swimlanes" or k.startswith("swimlanes.")}
    for k in mods:
        del sys.modules[k]
    sys.modules.update(saved)
    return mods


def _modules() -> dict[str, Any]:
    return {k: v for k, v in sys.modules.items() if k == "swimlanes" or k.startswith("swimlanes.")}


def use_variant(mods: dict[str, Any]) -> None:
    for k in [k for k in sys.modules if k == "swimlanes" or k.startswith("swimlanes.")]:
        del sys.modules[k]
    sys.modules.update(mods)


def compare(args: argparse.Namespace) -> int:
    """Interleaved rounds, baseline then this code (the order alternating per round)."""
    variants = {"baseline": load_variant(args.baseline), "this": load_variant(args.this)}
    sizes = args.sizes or [100_000]
    cases = CASES if args.case == "all" else (args.case,)
    rounds = max(args.repeat, 1)
    with tempfile.TemporaryDirectory() as folder:
        for case in cases:
            for n in sizes:
                if case == "cli":
                    times = _compare_cli(n, folder, args.baseline, args.this, rounds)
                else:
                    times = _compare_engine(n, case, args.device, variants, rounds)
                print(json.dumps(_ratio_line(case, n, times)), flush=True)
    return 0


def _compare_engine(
    n: int, case: str, device: str, variants: dict[str, dict], rounds: int
) -> dict[str, list[float]]:
    inputs = {}
    for name, mods in variants.items():
        use_variant(mods)
        document = mods["swimlanes.model.document"]
        make = make_pipeline if case == "repetitive" else make_random_pipeline
        pipeline = make(n) if case == "repetitive" else make(n, document=document)
        inputs[name] = (mods, mods["swimlanes.engine"].get_preset(device), pipeline)
    times: dict[str, list[float]] = {name: [] for name in variants}
    results = {}
    for mods, preset, pipeline in inputs.values():  # untimed: lazy imports, warm caches
        use_variant(mods)
        mods["swimlanes.engine"].simulate(pipeline, preset)
        mods.update(_modules())  # what it imported lazily belongs to it from now on
    for r in range(rounds):
        for name in list(variants)[:: 1 if r % 2 == 0 else -1]:
            mods, preset, pipeline = inputs[name]
            use_variant(mods)
            c0 = time.process_time()
            timeline = mods["swimlanes.engine"].simulate(pipeline, preset)
            times[name].append(time.process_time() - c0)
            results[name] = (timeline.start.tolist(), timeline.end.tolist())
            del timeline
    assert results["baseline"] == results["this"], "the two variants simulate differently"
    return times


def _compare_cli(
    n: int, folder: str, baseline: str, this: str | None, rounds: int
) -> dict[str, list[float]]:
    path = write_random_file(n, folder)
    envs = {"baseline": {**os.environ, "PYTHONPATH": baseline}, "this": dict(os.environ)}
    envs["this"].pop("PYTHONPATH", None)
    if this:
        envs["this"]["PYTHONPATH"] = this
    times: dict[str, list[float]] = {name: [] for name in envs}
    for r in range(rounds):
        for name in list(envs)[:: 1 if r % 2 == 0 else -1]:
            times[name].append(time_cli(path, envs[name])[1])
    return times


def _ratio_line(case: str, n: int, times: dict[str, list[float]]) -> dict:
    ratios = sorted(b / t for b, t in zip(times["baseline"], times["this"], strict=True))
    this = statistics.median(times["this"])
    return {
        "bench": "compare",
        "case": case,
        "ops": n,
        "runs": len(ratios),
        "speedup_median": round(statistics.median(ratios), 3),
        "speedup_min": round(ratios[0], 3),
        "speedup_max": round(ratios[-1], 3),
        "baseline_cpu_median": round(statistics.median(times["baseline"]), 3),
        "this_cpu_median": round(this, 3),
        "this_ops_per_cpu_s": round(n / this),
    }


# -- command line -------------------------------------------------------------------------------
def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sizes", nargs="*", type=int, help=f"op counts (default {SIZES})")
    parser.add_argument("--device", default="h200", help="preset name or file (default h200)")
    parser.add_argument("--case", default="repetitive", choices=(*CASES, "all"))
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per size; report the median (default 1)"
    )
    parser.add_argument("--baseline", help="the app folder of another checkout to compare with")
    parser.add_argument(
        "--this", help="with --baseline: the app folder to compare (default: this one)"
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one size, in this process
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.baseline:
        return compare(args)
    if args.one:
        print(json.dumps(measure(args.one, args.device, args.case)), flush=True)
        return 0
    cases = CASES if args.case == "all" else (args.case,)
    with tempfile.TemporaryDirectory() as folder:
        for case in cases:
            for n in args.sizes or list(SIZES):
                runs = [_one_run(case, n, args.device, folder) for _ in range(args.repeat)]
                if any(r is None for r in runs):
                    return 1
                print(json.dumps(_summary(runs)), flush=True)
    return 0


def _one_run(case: str, n: int, device: str, folder: str) -> dict | None:
    if case == "cli":
        return measure_cli(n, folder)
    # One process per run, so each size's peak memory is its own.
    out = subprocess.run(
        [sys.executable, __file__, "--device", device, "--case", case, "--one", str(n)],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        return None
    return json.loads(out.stdout)


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
    )
    if "peak_mb" in median:
        median["peak_mb"] = max(r["peak_mb"] for r in runs)
    return median


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
