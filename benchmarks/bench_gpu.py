"""GPU executor overhead benchmarks (run on a machine with a CUDA GPU; prints JSON lines).

1. A launch-bound pipeline of 1,000 empty kernels through the executor vs a bare Numba loop
   issuing the same launches (target: at most 1.10x).
2. A 256 MB pinned H2D copy through the executor vs a bare Numba copy (target: >= 95% of the
   bare bandwidth).
3. CUPTI on vs off: makespan of shipped examples with the CUPTI back end vs no device
   instrumentation at all (target: within 5%).
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np


def emit(**fields: object) -> None:
    print(json.dumps({"bench": "gpu", **fields}), flush=True)


def pipeline(streams: list[dict], program: list[dict]):
    from swimlanes.model.validate import pipeline_from_dict

    doc = {"format": "swimlanes-pipeline", "version": 1, "name": "bench"}
    return pipeline_from_dict({**doc, "streams": streams, "program": program})


def bare_launches(n: int, reps: int, with_cupti: bool = False) -> float:
    """Seconds from the first of n launches to the device being idle (median of reps).

    ``with_cupti``: the same loop with CUPTI's kernel/memcpy/memset tracing on, which shows
    what CUPTI itself costs per launch.
    """
    from numba import cuda

    from swimlanes.gpu.kernels import build

    spin = build(False).spin
    stream = cuda.stream()
    launch = spin[1, 32, stream]
    launch(1)
    cuda.synchronize()
    kinds = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET")
    if with_cupti:
        from swimlanes.gpu.probes import CuptiProbe, _cupti

        cupti = _cupti()
        assert CuptiProbe._registered, "run the executor with CUPTI first"
        for kind in kinds:
            cupti.activity_enable(getattr(cupti.ActivityKind, kind))
        launch(1)
        stream.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            launch(1)
        stream.synchronize()
        times.append(time.perf_counter_ns() - t0)
    if with_cupti:
        cupti.activity_flush_all(1)
        for kind in kinds:
            cupti.activity_disable(getattr(cupti.ActivityKind, kind))
        CuptiProbe._records.clear()
    return statistics.median(times) / 1e9


def executor_launches(n: int, reps: int, backend: str) -> float:
    from swimlanes.gpu.executor import execute

    k = {"op": "kernel", "stream": "s", "blocks": 1, "threads": 32, "block_us": 0.001}
    p = pipeline(
        [{"name": "s"}], [dict(k) for _ in range(n)] + [{"op": "stream_sync", "stream": "s"}]
    )
    tl = execute(p, repeat=reps, warmup=1, backend=backend)
    return tl.makespan_ns / 1e9


def bare_copy_gbps(nbytes: int, reps: int) -> float:
    from numba import cuda

    host = cuda.pinned_array(nbytes, dtype=np.uint8)
    dev = cuda.device_array(nbytes, dtype=np.uint8)
    stream = cuda.stream()
    e0, e1 = cuda.event(), cuda.event()
    rates = []
    for _ in range(reps + 1):
        e0.record(stream)
        dev.copy_to_device(host, stream=stream)
        e1.record(stream)
        e1.synchronize()
        rates.append(nbytes / (cuda.event_elapsed_time(e0, e1) * 1e6))
    del host, dev
    return statistics.median(rates[1:])


def executor_copy_gbps(nbytes: int, reps: int) -> tuple[float, str]:
    from swimlanes.gpu.executor import execute
    from swimlanes.timeline.timeline import NO_TIME

    p = pipeline(
        [{"name": "s"}], [{"op": "h2d", "stream": "s", "bytes": nbytes}, {"op": "device_sync"}]
    )
    tl = execute(p, repeat=reps, warmup=1)
    if tl.start[0] == NO_TIME:
        raise SystemExit(f"the executor measured no copy span: {tl.meta}")
    return nbytes / int(tl.end[0] - tl.start[0]), str(tl.meta["backend"])


def cupti_on_off(names: list[str], reps: int, rounds: int = 3) -> None:
    """Makespan with CUPTI, with events and with no device instrumentation, interleaved
    (on, off, events, on, off, ...) so that drifting clocks do not favour one of them."""
    from swimlanes.gpu.executor import execute
    from swimlanes.model.io import load_pipeline
    from swimlanes.resources import example_path

    for name in names:
        p = load_pipeline(example_path(name))
        ms: dict[str, list[float]] = {"cupti": [], "none": [], "events": []}
        first: dict[str, list[float]] = {"cupti": [], "none": [], "events": []}
        for _ in range(rounds):
            for backend in ms:
                tl = execute(p, repeat=reps, backend=backend)
                ms[backend].append(tl.makespan_ns / 1e6)
                first[backend].append(tl.meta["first_issue_us"] / tl.meta["median_issue_us"])
        on, off, ev = (statistics.median(ms[b]) for b in ("cupti", "none", "events"))
        emit(
            case="cupti_on_off",
            example=name,
            cupti_ms=round(on, 3),
            off_ms=round(off, 3),
            events_ms=round(ev, 3),
            cupti_change_pct=round(100 * (on - off) / off, 2),
            events_change_pct=round(100 * (ev - off) / off, 2),
            first_op_issue_vs_median={b: round(statistics.median(v), 2) for b, v in first.items()},
            target_pct=5.0,
        )


def main() -> int:
    from swimlanes.gpu import cuda_available

    if not cuda_available():
        print("no CUDA GPU found: nothing to benchmark", file=sys.stderr)
        return 2
    n, reps, rounds = 1000, 5, 3
    # Interleaved rounds, medians: the host's launch cost drifts by 10-20% between runs.
    ms: dict[str, list[float]] = {k: [] for k in ("bare", "cupti", "events", "none", "bare_cupti")}
    for _ in range(rounds):
        ms["bare"].append(bare_launches(n, reps))
        for backend in ("cupti", "events", "none"):
            ms[backend].append(executor_launches(n, reps, backend))
        ms["bare_cupti"].append(bare_launches(n, reps, with_cupti=True))
    med = {k: statistics.median(v) for k, v in ms.items()}
    for backend in ("cupti", "events", "none"):
        emit(
            case="launch_bound",
            kernels=n,
            backend=backend,
            executor_ms=round(med[backend] * 1e3, 3),
            bare_ms=round(med["bare"] * 1e3, 3),
            ratio=round(med[backend] / med["bare"], 3),
            target_ratio=1.10,
        )
    emit(
        case="cupti_cost_per_launch",
        bare_us=round(med["bare"] / n * 1e6, 3),
        bare_with_cupti_us=round(med["bare_cupti"] / n * 1e6, 3),
        ratio=round(med["bare_cupti"] / med["bare"], 3),
    )
    nbytes = 256 << 20
    bare_bw = bare_copy_gbps(nbytes, reps)
    ex_bw, backend = executor_copy_gbps(nbytes, reps)
    emit(
        case="h2d_256MB_pinned",
        backend=backend,
        executor_gbps=round(ex_bw, 2),
        bare_gbps=round(bare_bw, 2),
        fraction=round(ex_bw / bare_bw, 4),
        target_fraction=0.95,
    )
    cupti_on_off(["swimming-in-streams", "launch-bound", "chunked-overlap", "priority"], reps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
