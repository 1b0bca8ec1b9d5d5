"""The calibration's probes: each method of :class:`Calibration` runs one small pipeline
through the executor and measures one thing (copy rates, host costs, latencies, SM limits and
rates); :func:`swimlanes.gpu.calibrate.calibrate` runs them and fits a preset from what they
measure."""

from __future__ import annotations

import math
import os
import time
from typing import Any

import numpy as np

from swimlanes.gpu.backend_api import CudaBackend
from swimlanes.gpu.calibration_programs import (
    BLOCKING_CALLS,
    ISSUE_LOOPS,
    ISSUE_SAMPLES,
    MIXED_STREAMS,
    copy_order_of,
    grid_rate_program,
    hardware_queue_program,
    mixed_issue_program,
    queue_choices,
    queue_probe_findings,
    roofline_overlap,
    timing_program,
)
from swimlanes.gpu.errors import ExecutionCancelled, GpuError
from swimlanes.gpu.executor import execute
from swimlanes.model.validate import pipeline_from_dict
from swimlanes.timeline.timeline import NO_TIME, Timeline

KB, MB, GB = 1 << 10, 1 << 20, 1 << 30
#: Cheap calls the host thread makes after each host function of the latency probe (about
#: 4 us each): the callback becomes due while the host is making calls, as in a pipeline.
HOST_FUNC_PROBE_CALLS = 40
FULL_SIZES = [KB * 4**i for i in range(11)]  # 1 KB .. 1 GB
QUICK_SIZES = [KB, 16 * KB, 256 * KB, 4 * MB, 64 * MB]
#: Runs of the cold host-function probe: each run's one callback is its first.
COLD_HOST_FUNC_RUNS = 5
#: How long the callback thread idles before the cold probe's host function (a pipeline's
#: first one follows the previous run's last by milliseconds).
COLD_HOST_FUNC_IDLE_US = 5000.0
#: Pipelines calibrate() runs (for its progress fraction).
MEASUREMENTS = 16 + COLD_HOST_FUNC_RUNS
#: Trials of the copy-order probe in its one run (it takes the majority's order).
COPY_ORDER_TRIALS = 5


class Calibration:
    """One calibration's probes on one GPU, the raw record of what they measured, its
    progress and its time limit."""

    def __init__(self, be: CudaBackend, quick: bool, progress: Any, cancel: Any) -> None:
        self.be = be
        self.quick = quick
        self.repeat = 2 if quick else 3
        self.progress = progress
        self.cancel = cancel
        self.steps_done = 0
        self.raw: dict[str, Any] = {}
        self.started = time.monotonic()
        self.time_limit_s: float | None = None
        self.skipped: list[str] = []

    def over_time(self, probe: str) -> bool:
        """True (and ``probe`` noted as skipped) once the time limit has passed."""
        if self.time_limit_s is None or time.monotonic() - self.started < self.time_limit_s:
            return False
        self.skipped.append(probe)
        return True

    def measure(
        self,
        name: str,
        streams: list[dict],
        program: list[dict],
        backend: str = "auto",
        repeat: int | None = None,
    ) -> Timeline:
        if self.cancel is not None and self.cancel():
            raise ExecutionCancelled("calibration cancelled")
        p = _pipeline(name, streams, program)
        reps = repeat or self.repeat
        tl = execute(p, repeat=reps, warmup=1, backend=backend, cuda_backend=self.be)
        self.steps_done += 1
        if self.progress is not None:
            self.progress(min(1.0, self.steps_done / MEASUREMENTS))
        if backend == "auto":
            self.raw.setdefault("backend", tl.meta.get("backend"))
        return tl

    # -- copies -----------------------------------------------------------------------------
    def copy_sweep(self) -> dict[str, list[list[float]]]:
        sizes = QUICK_SIZES if self.quick else FULL_SIZES
        table: dict[str, list[list[float]]] = {}
        for kind in ("h2d", "d2h"):
            for mem in ("pinned", "pageable"):
                program: list[dict] = []
                for n in sizes:
                    program.append({"op": kind, "stream": "s", "bytes": n, "host_memory": mem})
                    program.append({"op": "stream_sync", "stream": "s"})
                # Pageable copies go through the CPU's staging copy: noisier, so more runs.
                reps = self.repeat + (2 if mem == "pageable" else 0)
                tl = self.measure(f"{kind} {mem}", [{"name": "s"}], program, repeat=reps)
                rows = [r for r in range(len(tl)) if tl.op_kind(r) == kind]
                table[f"{kind}_{mem}"] = [
                    [float(n), round(n / max(1, int(tl.end[r] - tl.start[r])), 3)]
                    for n, r in zip(sizes, rows, strict=True)
                ]
                self.raw[f"copy_{kind}_{mem}"] = [_span(tl, r) for r in rows]
                if mem == "pageable":  # the host's side: bytes over the whole call
                    table[f"{kind}_pageable_host"] = [
                        [float(n), round(n / max(1, int(tl.issue_end[r] - tl.issue_start[r])), 3)]
                        for n, r in zip(sizes, rows, strict=True)
                    ]
        return table

    def bidirectional(self, n: int) -> dict[str, float]:
        s = [{"name": "a", "kind": "non_blocking"}, {"name": "b", "kind": "non_blocking"}]
        prog: list[dict] = [
            {"op": "h2d", "stream": "a", "bytes": n},
            {"op": "d2h", "stream": "b", "bytes": n},
            {"op": "device_sync"},
            {"op": "h2d", "stream": "a", "bytes": n},
            {"op": "device_sync"},
            {"op": "d2h", "stream": "b", "bytes": n},
            {"op": "device_sync"},
        ]
        tl = self.measure("bidirectional", s, prog)
        both = [_dur(tl, 0), _dur(tl, 1)]
        alone = [_dur(tl, 3), _dur(tl, 5)]
        self.raw["bidirectional"] = {"bytes": n, "together_ns": both, "alone_ns": alone}
        # Per direction: on PCIe the D2H suffers more (see DevicePreset); timing() refines
        # both with a fixed cost per copy from a stream of smaller copies.
        h2d, d2h = (round(max(0.0, b / a - 1.0), 4) for b, a in zip(both, alone, strict=True))
        return {"bidirectional_slowdown": h2d, "bidirectional_slowdown_d2h": d2h}

    def copy_order(self, n: int) -> str:
        """The copy engine's order among ready copies, by a majority of COPY_ORDER_TRIALS
        trials in one run (``calibration_programs.copy_order_of`` reads each): whether a
        stream's second copy overtakes another stream's earlier one. The order three copies
        issued at once ran in is recorded too; it varies from host to host and decides
        nothing."""
        s = [{"name": f"s{i}", "kind": "non_blocking"} for i in (1, 2, 3)]
        trial = [{"op": "h2d", "stream": f"s{i}", "bytes": n} for i in (1, 2, 3)]
        trial += [{"op": "device_sync"}, {"op": "h2d", "stream": "s1", "bytes": n}]
        trial += [
            {"op": "h2d", "stream": "s2", "bytes": n},
            {"op": "h2d", "stream": "s1", "bytes": n},
            {"op": "device_sync"},
        ]
        tl = self.measure("copy order", s, trial * COPY_ORDER_TRIALS)
        trials = []
        for k in range(COPY_ORDER_TRIALS):
            at = k * len(trial)
            first = sorted((at, at + 1, at + 2), key=lambda r: int(tl.start[r]))
            second = sorted((at + 4, at + 5, at + 6), key=lambda r: int(tl.start[r]))
            trials.append(
                {
                    "three_streams_issued_s1_s2_s3_ran": [tl.stream_name(r) for r in first],
                    "issued_s1_s2_s1_ran": [f"{tl.stream_name(r)}#{r - at}" for r in second],
                }
            )
        order = copy_order_of({"trials": trials})
        # The keys of one trial that saw the majority's order (what the summary prints), and
        # every trial.
        shown = next(t for t in trials if copy_order_of(t) == order)
        self.raw["copy_order"] = {**shown, "trials": trials}
        return order

    def hardware_queues(self) -> dict[str, Any]:
        """Whether streams share hardware queues, and how an op picks its queue (see
        ``calibration_programs.hardware_queue_program`` and ``queue_choices``)."""
        streams, program, rows = hardware_queue_program()
        tl = self.measure("hardware queues", streams, program)
        findings = queue_probe_findings(
            tl.issue_end.tolist(), tl.start.tolist(), tl.end.tolist(), rows
        )
        self.raw["hardware_queues"] = findings
        # How many queues there are is CUDA's setting (CUDA_DEVICE_MAX_CONNECTIONS, 8 unless
        # set): which stream waited first varied between runs of the older probe on one H200.
        return queue_choices(findings, _connections_setting())

    # -- host costs and latencies -----------------------------------------------------------
    def issue_costs(self) -> dict[str, dict[str, float]]:
        """Host cost of each call: ``issue_cost_us`` among other calls (the mixed program),
        ``repeat_issue_cost_us`` in a loop of the same call; blocking calls on an idle device."""
        program: list[dict] = [{"op": "event_record", "stream": "s", "event": "e"}]
        loops: list[tuple[str, int, int]] = []  # (kind, first row, end row) of each loop
        for name, op in ISSUE_LOOPS.items():
            loops.append((name, len(program) + 1, len(program) + ISSUE_SAMPLES))
            program += [dict(op) for _ in range(ISSUE_SAMPLES)]
            program.append({"op": "device_sync"})
        mixed_from = len(program)
        program += mixed_issue_program()
        program.append({"op": "device_sync"})
        # Measured under the default back end (what `swimlanes run` measures against), and
        # without any device instrumentation (what a plain program pays), both kept raw.
        costs: dict[str, dict[str, float]] = {}
        repeat: dict[str, float] = {}
        streams = [{"name": name} for name in ("s", "t", *MIXED_STREAMS)]
        for backend in ("none", "auto"):
            tl = self.measure("issue costs", streams, program, backend)
            cost = (tl.issue_end - tl.issue_start) / 1000.0
            if backend == "auto":  # a loop's first call is not a repeat: the rows after it are
                repeat = {k: round(float(np.median(cost[a:b])), 3) for k, a, b in loops}
            costs[backend] = {"host": 0.0}
            for kind in (*ISSUE_LOOPS, "malloc", "free"):
                blocking = kind in BLOCKING_CALLS
                rows = [
                    r
                    for r in range(1 if blocking else mixed_from, len(tl))
                    if tl.op_kind(r) == kind
                ]
                costs[backend][kind] = round(float(np.median(cost[rows])), 3)
        out = costs["auto"]
        self.raw["issue_cost_us"] = out
        self.raw["issue_cost_uninstrumented_us"] = costs["none"]
        self.raw["repeat_issue_cost_us"] = repeat
        enqueueing = {k: v for k, v in repeat.items() if k not in BLOCKING_CALLS}
        return {"issue_cost_us": out, "repeat_issue_cost_us": enqueueing}

    def launch_latency(self) -> dict[str, float]:
        k = {"op": "kernel", "stream": "s", "blocks": 1, "threads": 32, "block_us": 5}
        program: list[dict] = []
        for _ in range(ISSUE_SAMPLES):
            program += [dict(k), {"op": "stream_sync", "stream": "s"}]
        tl = self.measure("launch latency", [{"name": "s"}], program)
        rows = [r for r in range(len(tl)) if tl.op_kind(r) == "kernel"]
        after_return = [(int(tl.start[r]) - int(tl.issue_end[r])) / 1000.0 for r in rows]
        after_call = [(int(tl.start[r]) - int(tl.issue_start[r])) / 1000.0 for r in rows]
        self.raw["launch_latency_us"] = {
            "start_minus_call_return": round(float(np.median(after_return)), 3),
            "start_minus_call_start": round(float(np.median(after_call)), 3),
        }
        # A kernel's span beyond its blocks' time (launch and completion on the device).
        overhead = [_dur(tl, r) / 1000.0 - 5.0 for r in rows]
        self.raw["kernel_overhead_us"] = round(float(np.median(overhead)), 3)
        return {
            "kernel_launch_latency_us": max(0.0, round(float(np.median(after_return)), 3)),
            "kernel_overhead_us": max(0.0, self.raw["kernel_overhead_us"]),
        }

    def host_func_latency(self) -> dict[str, float]:
        """How long after the kernel before it ends a host function starts (its callback
        thread wakes), while the host thread goes on making calls, as a pipeline's does.
        On an H200 host (2026-11-25, host functions launched straight into the driver) this
        measured 52 us; with the host thread waiting in a stream sync 36 us, and with it busy
        outside the driver for 400 us 62 us. Both stay in the raw record
        (``host_func_latency_waiting_us``, ``host_func_latency_busy_us``). After a millisecond
        or more without callbacks the thread wakes later (81 to 149 us;
        benchmarks/probes/host_func_wake.py), which this probe, with callbacks a few hundred
        microseconds apart, does not see."""
        k = {"op": "kernel", "stream": "s", "blocks": 1, "threads": 32, "block_us": 50}
        calls = [{"op": "event_record", "stream": "t", "event": "c"}] * HOST_FUNC_PROBE_CALLS
        rounds: dict[str, list[dict[str, Any]]] = {
            "calling": [{"op": "host_func", "stream": "s", "duration_us": 1}, *calls],
            "waiting": [{"op": "host_func", "stream": "s", "duration_us": 1}],
            "busy": [
                {"op": "host_func", "stream": "s", "duration_us": 1},
                {"op": "host", "duration_us": 400.0},
            ],
        }
        program: list[dict] = []
        where: dict[str, list[int]] = {name: [] for name in rounds}
        for name, after in rounds.items():
            for _ in range(ISSUE_SAMPLES // 4):
                where[name].append(len(program))
                program += [dict(k), *[dict(o) for o in after]]
                program.append({"op": "stream_sync", "stream": "s"})
        streams = [{"name": "s"}, {"name": "t", "kind": "non_blocking"}]
        tl = self.measure("host function latency", streams, program)
        lags = {
            name: round(float(np.median([_gap_after(tl, r) for r in rows])), 3)
            for name, rows in where.items()
        }
        self.raw["host_func_latency_us"] = lags["calling"]
        self.raw["host_func_latency_waiting_us"] = lags["waiting"]
        self.raw["host_func_latency_busy_us"] = lags["busy"]
        cold = self.host_func_cold_latency(k)
        return {
            "host_func_latency_us": max(0.0, lags["calling"]),
            "host_func_cold_latency_us": max(0.0, cold),
        }

    def host_func_cold_latency(self, k: dict[str, Any]) -> float:
        """The same lag for a run's first host function, whose callback thread has been idle
        since before the run: in the random pipelines of the fidelity benchmark (training
        halves, H100 and H200 hosts) those started 93 to 186 us (median per host) after they
        could run, 1.5 to 4.9 times ``host_func_latency_us``, while later ones, up to 1.3 ms
        after the previous callback, started about as the probe above measures. Each of a few
        runs has one host function after the callback thread has been idle for
        COLD_HOST_FUNC_IDLE_US (a run's repetitions follow each other within microseconds: the
        thread would still be awake from the last one); their median."""
        program: list[dict[str, Any]] = [{"op": "host", "duration_us": COLD_HOST_FUNC_IDLE_US}]
        program += [dict(k), {"op": "host_func", "stream": "s", "duration_us": 1}]
        program.append({"op": "stream_sync", "stream": "s"})
        lags = []
        for _ in range(COLD_HOST_FUNC_RUNS):
            tl = self.measure("cold host function", [{"name": "s"}], program)
            kernel = next(r for r in range(len(tl)) if tl.op_kind(r) == "kernel")
            lags.append(_gap_after(tl, kernel))
        self.raw["host_func_cold_latency_runs_us"] = [round(x, 3) for x in lags]
        self.raw["host_func_cold_latency_us"] = round(float(np.median(lags)), 3)
        return float(self.raw["host_func_cold_latency_us"])

    def sync_return(self) -> dict[str, float]:
        """How long after the device finishes a blocking call returns to the host."""
        k = {"op": "kernel", "stream": "s", "blocks": 1, "threads": 32, "block_us": 100}
        waits: dict[str, list[dict]] = {
            "stream_sync": [{"op": "stream_sync", "stream": "s"}],
            "event_sync": [
                {"op": "event_record", "stream": "s", "event": "e"},
                {"op": "event_sync", "event": "e"},
            ],
            "device_sync": [{"op": "device_sync"}],
            "sync_copy": [{"op": "d2h", "stream": "s", "bytes": 4 * MB, "async": False}],
        }
        program: list[dict] = []
        for ops in waits.values():
            for _ in range(ISSUE_SAMPLES // 2):
                program += [dict(k), *[dict(o) for o in ops]]
        tl = self.measure("sync return", [{"name": "s"}], program)
        out: dict[str, float] = {}
        r, per = 0, ISSUE_SAMPLES // 2
        for name, ops in waits.items():
            gaps = []
            for _ in range(per):
                last = r + len(ops)  # the blocking call; it waits for the kernel (or copy)
                device_end = int(tl.end[last if name == "sync_copy" else r])
                gaps.append((int(tl.issue_end[last]) - device_end) / 1000.0)
                r += 1 + len(ops)
            out[name] = round(float(np.median(gaps)), 3)
        self.raw["sync_return_us"] = out
        return {name: max(0.0, lag) for name, lag in out.items()}

    def timing(self, preset: dict[str, Any]) -> dict[str, float]:
        """Dependent ops and copies in both directions at once, fitted like the examples."""
        from swimlanes.engine.fit import fit_timing
        from swimlanes.engine.presets import DevicePreset

        streams = [{"name": "a", "kind": "non_blocking"}, {"name": "b", "kind": "non_blocking"}]
        program = timing_program(self.quick)
        tl = self.measure("timing", streams, program)
        fitted = fit_timing(
            [(_pipeline("timing", streams, program), tl)], DevicePreset.from_dict(preset)
        )
        self.raw["timing"] = fitted
        return fitted

    # -- SMs, memory and arithmetic ---------------------------------------------------------
    def residency(self, sm: int, max_threads: int, max_blocks: int) -> dict[str, Any]:
        block_us = 100.0
        program, configs = [], []
        for threads in (64, 128, 256, 512, 1024):
            per_sm = min(max_blocks, max_threads // threads)
            for waves in (1, 4):
                blocks = sm * per_sm * waves
                configs.append((threads, per_sm, waves, blocks))
                program.append(
                    {
                        "op": "kernel",
                        "stream": "s",
                        "blocks": blocks,
                        "threads": threads,
                        "block_us": block_us,
                    }
                )
        tl = self.measure("residency", [{"name": "s"}], program)
        rows = []
        for r, (threads, per_sm, waves, blocks) in enumerate(configs):
            dur_us = _dur(tl, r) / 1000.0
            seen_waves = max(1, round(dur_us / block_us))
            rows.append(
                {
                    "threads": threads,
                    "blocks": blocks,
                    "model_blocks_per_sm": per_sm,
                    "measured_blocks_per_sm": math.ceil(blocks / (sm * seen_waves)),
                    "duration_us": round(dur_us, 3),
                    "overhead_per_wave_us": round((dur_us - waves * block_us) / waves, 3),
                }
            )
        self.raw["residency"] = rows
        return {
            "rows": rows,
            "all_match": all(x["model_blocks_per_sm"] == x["measured_blocks_per_sm"] for x in rows),
        }

    def memory_and_flops(self, sm: int) -> tuple[float, float]:
        n = 256 * MB if self.quick else GB
        flops = 2e11 if self.quick else 1e12
        program = [
            {"op": "d2d", "stream": "s", "bytes": n},
            {"op": "memset", "stream": "s", "bytes": n},
            {"op": "kernel", "stream": "s", "blocks": sm * 8, "threads": 256, "flops": flops},
            {"op": "kernel", "stream": "s", "blocks": sm * 32, "threads": 256, "bytes": n},
        ]
        tl = self.measure("memory and flops", [{"name": "s"}], program)
        d2d, memset, fma, stream = (_dur(tl, r) for r in range(4))
        self.raw["memory"] = {
            "bytes": n,
            "d2d_gbps": round(2 * n / d2d, 1),
            "memset_gbps": round(n / memset, 1),
            "stream_kernel_gbps": round(n / stream, 1),
            "fma_kernel_tflops": round(flops / fma / 1000.0, 2),
        }
        return round(2 * n / d2d, 1), round(flops / fma / 1000.0, 2)

    def grid_rates(self, sm: int) -> dict[str, float]:
        """One warp's FLOP rate (an FMA kernel of one warp) and memory rate (a streaming
        kernel of one warp per SM: a single warp's is mostly its launch)."""
        program = grid_rate_program(sm)
        tl = self.measure("kernel rates", [{"name": "s"}], program)
        rates = []
        for r, op in enumerate(program):
            ns = _dur(tl, r)
            work = {"flops_per_ns": op["flops"] / ns} if "flops" in op else {}
            if "bytes" in op:
                work["bytes_per_ns"] = op["bytes"] / ns
            rates.append({"blocks": op["blocks"], "threads": op["threads"], "us": ns / 1e3, **work})
        self.raw["kernel_rates"] = rates
        one = next(
            r for r in rates if (r["blocks"], r["threads"]) == (1, 32) and "bytes_per_ns" not in r
        )
        per_sm = next(
            r for r in rates if (r["blocks"], r["threads"]) == (sm, 32) and "flops_per_ns" not in r
        )
        return {
            "warp_gflops": round(one["flops_per_ns"], 3),
            "warp_gbps": round(per_sm["bytes_per_ns"] / sm, 3),
            "roofline_overlap": roofline_overlap(rates),
        }


def _connections_setting() -> int:
    """CUDA_DEVICE_MAX_CONNECTIONS as the driver reads it (8 when unset or not a number)."""
    try:
        value = int(os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "8"))
    except ValueError:
        return 8
    return min(32, max(1, value))


def _pipeline(name: str, streams: list[dict], program: list[dict]) -> Any:
    doc = {"format": "swimlanes-pipeline", "version": 1, "name": name}
    return pipeline_from_dict({**doc, "streams": streams, "program": program})


def _dur(tl: Timeline, row: int) -> int:
    if tl.start[row] == NO_TIME or tl.end[row] == NO_TIME:
        raise GpuError(
            f"calibration ({tl.name}): no device span was measured for op {row} "
            f"({tl.meta.get('cupti_unmatched') or tl.meta.get('backend')})"
        )
    return max(1, int(tl.end[row]) - int(tl.start[row]))


def _span(tl: Timeline, r: int) -> dict[str, float]:
    return {
        "bytes": int(tl.bytes[r]),
        "issue_us": round((int(tl.issue_end[r]) - int(tl.issue_start[r])) / 1000.0, 3),
        "duration_us": round(_dur(tl, r) / 1000.0, 3),
    }


def _gap_after(tl: Timeline, row: int) -> float:
    """Microseconds from the end of op ``row`` to the start of op ``row + 1``."""
    for measured in (row, row + 1):
        _dur(tl, measured)  # both spans measured, or a clear error naming the op
    return (int(tl.start[row + 1]) - int(tl.end[row])) / 1000.0
