"""Measure the GPU this runs on and fit a device preset for the simulator.

Every measurement is a small generated pipeline run through the executor (so host costs are
those of the calls the executor really makes, and device spans come from the same back end as
``swimlanes run``):

* copy time vs size, 1 KB .. 1 GB, per direction, pinned and pageable, each copy alone
  (``bandwidth_table`` and the per-kind GB/s at 256 MB, ``copy_latency_us`` from 1 KB copies);
* an H2D and a D2H copy at once (``bidirectional_slowdown``);
* same-direction copies on several streams: the order the copy engine ran them;
* the host cost of each API call (``issue_cost_us``), kernel launch latency on an idle GPU;
* SM count and block limits (device attributes) and the synthetic kernels' measured residency
  (waves of 100 us blocks), device-to-device copy and memset bandwidth (``memory_gbps``) and
  the FMA kernel's rate (``peak_tflops``);
* a kernel's time beyond its blocks' (``kernel_overhead_us``) and how late each kind of
  blocking call returns after the work it waits for (``sync_return_us``);
* a small pipeline of dependent copies and kernels, and of copies in both directions at once,
  fitted by ``swimlanes.engine.fit.fit_timing`` (the host's gap between calls, copy launch and
  dependency latencies, the copy engine's rest, the per-direction bidirectional slowdown,
  fixed cost and rest), the same fit the shipped example measurements go through.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from swimlanes.gpu.backend import make_backend
from swimlanes.gpu.backend_api import CudaBackend
from swimlanes.gpu.calibration_programs import (
    BLOCKING_CALLS,
    ISSUE_LOOPS,
    ISSUE_SAMPLES,
    MIXED_STREAMS,
    copy_order_of,
    grid_rate_program,
    mixed_issue_program,
    roofline_overlap,
    timing_program,
)
from swimlanes.gpu.errors import ExecutionCancelled, GpuError
from swimlanes.gpu.executor import execute
from swimlanes.gpu.plan import DeviceInfo
from swimlanes.model.validate import pipeline_from_dict
from swimlanes.timeline.timeline import NO_TIME, Timeline

KB, MB, GB = 1 << 10, 1 << 20, 1 << 30
#: Cheap calls the host thread makes after each host function of the latency probe (about
#: 4 us each): the callback becomes due while the host is making calls, as in a pipeline.
HOST_FUNC_PROBE_CALLS = 40
FULL_SIZES = [KB * 4**i for i in range(11)]  # 1 KB .. 1 GB
QUICK_SIZES = [KB, 16 * KB, 256 * KB, 4 * MB, 64 * MB]
REFERENCE_SIZE = 256 * MB
PAGEABLE_H2D_CHUNK, PAGEABLE_D2H_CHUNK = MB, 2 * MB
#: Streams the hardware-queue probe uses (CUDA allows at most 32 connections; 8 by default).
QUEUE_PROBE_STREAMS = 16
#: Pipelines calibrate() runs (for its progress fraction).
MEASUREMENTS = 16
#: A quick calibration (the one a GPU run makes first on a new host) stops measuring its
#: optional probes once this many seconds have passed, so a first run never waits longer.
QUICK_TIME_LIMIT_S = 20.0


class _Calibration:
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
        s = [{"name": f"s{i}", "kind": "non_blocking"} for i in (1, 2, 3)]
        prog = [{"op": "h2d", "stream": f"s{i}", "bytes": n} for i in (1, 2, 3)]
        prog += [{"op": "device_sync"}, {"op": "h2d", "stream": "s1", "bytes": n}]
        prog += [
            {"op": "h2d", "stream": "s2", "bytes": n},
            {"op": "h2d", "stream": "s1", "bytes": n},
        ]
        tl = self.measure("copy order", s, prog)
        first = sorted((0, 1, 2), key=lambda r: int(tl.start[r]))
        second = sorted((4, 5, 6), key=lambda r: int(tl.start[r]))
        self.raw["copy_order"] = probe = {
            "three_streams_issued_s1_s2_s3_ran": [tl.stream_name(r) for r in first],
            "issued_s1_s2_s1_ran": [f"{tl.stream_name(r)}#{r}" for r in second],
        }
        return copy_order_of(probe)

    def hardware_queues(self) -> dict[str, Any]:
        """Which streams share a hardware queue: a copy and a kernel held back on stream q0
        (behind a long kernel) and, issued after them, a copy and a kernel on each of 15 more
        streams. Streams whose op waited for the long kernel share a queue with q0; none waiting
        means each stream has its own, and copies that never wait get queues of their own."""
        n = QUEUE_PROBE_STREAMS
        streams = [{"name": f"q{i}", "kind": "non_blocking"} for i in range(n)]
        long_kernel = {"op": "kernel", "stream": "q0", "blocks": 1, "threads": 32, "block_us": 300}
        program: list[dict] = []
        for held, probe in (
            ({"op": "d2h", "stream": "q0", "bytes": 4 * KB}, {"op": "h2d", "bytes": 4 * KB}),
            (
                {"op": "kernel", "stream": "q0", "blocks": 1, "threads": 32, "block_us": 2},
                {"op": "kernel", "blocks": 1, "threads": 32, "block_us": 2},
            ),
        ):
            program += [dict(long_kernel), held]
            program += [{**probe, "stream": f"q{i}"} for i in range(1, n)]
            program.append({"op": "device_sync"})
        tl = self.measure("hardware queues", streams, program)
        waited: dict[str, list[int]] = {}
        for part, name in ((0, "copies"), (1, "kernels")):
            first = part * (n + 2)
            release = int(tl.end[first])
            waited[name] = [i for i in range(1, n) if int(tl.start[first + 1 + i]) >= release]
        self.raw["hardware_queues"] = {"streams_that_waited": waited}
        # Which stream was the first to wait varied between runs on one H200 (6, 8, 9), so the
        # probe only decides whether streams share queues at all; how many queues there are is
        # CUDA's setting (CUDA_DEVICE_MAX_CONNECTIONS, 8 unless set).
        shared = bool(waited["copies"] or waited["kernels"])
        return {
            "connections": _connections_setting() if shared else 0,
            "copy_queue_per_stream": bool(waited["kernels"]) and not waited["copies"],
        }

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
        On H100 and H200 hosts (2026-11-25) this measured 42 to 50 us; with the host thread
        waiting in a stream sync 30 to 36 us, and with it busy outside the driver for 400 us
        the callback started only after that (365 to 384 us). Both stay in the raw record
        (``host_func_latency_waiting_us``, ``host_func_latency_busy_us``). Random pipelines
        showed 119 to 164 us (median): none of the three probes explains that yet."""
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
        return {"host_func_latency_us": max(0.0, lags["calling"])}

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


#: The bandwidth-table kinds that also set a preset's ``<kind>_gbps`` figure.
_RATE_KINDS = ("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable")


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


def _gbps_at(table: list[list[float]], n: int) -> float:
    return min(table, key=lambda p: abs(math.log(p[0] / n)))[1]


def preset_name(device: str) -> str:
    """The built-in preset of a GPU by its name (``h200`` for an NVIDIA H200, ``a100`` for an
    NVIDIA A100-SXM4-80GB, ``rtx4090`` for a GeForce RTX 4090), else a slug of the name."""
    from swimlanes.engine import preset_names

    packed = re.sub(r"[^A-Z0-9]+", "", device.upper())
    for name in preset_names():
        if name != "ideal" and name.upper() in packed:
            return name
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "gpu"


def calibrate(
    *,
    quick: bool = False,
    progress: Callable[[float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    cuda_backend: CudaBackend | None = None,
    time_limit_s: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Measure the GPU; returns (preset JSON dict, raw measurements dict).

    ``time_limit_s`` (default: :data:`QUICK_TIME_LIMIT_S` when ``quick``, none otherwise) skips
    the optional probes once passed; ``raw["skipped"]`` names them and the preset's
    description says so.
    """
    be = cuda_backend if cuda_backend is not None else make_backend()
    info = be.device_info()
    c = _Calibration(be, quick, progress, cancel)
    c.time_limit_s = time_limit_s if time_limit_s is not None or not quick else QUICK_TIME_LIMIT_S
    ref = REFERENCE_SIZE if not quick else 64 * MB
    # What every preset needs comes first; the optional probes follow, most useful first, and
    # are skipped (their figures kept from the built-in preset) once the time limit is past.
    measured: dict[str, Any] = {"bandwidth_table": c.copy_sweep()}
    measured.update(c.issue_costs())
    measured.update(c.launch_latency())
    measured["sync_return_us"] = c.sync_return()
    measured["memory_gbps"], measured["peak_tflops"] = c.memory_and_flops(info.sm_count)
    measured["priority_least"], measured["priority_greatest"] = _priority_range(be)
    measured.update(_optional_probes(c, be, info, ref))
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    # The timing fit takes the copy rates and issue costs just measured as known.
    if not c.over_time("timing"):
        measured.update(c.timing(_fit_preset(info, measured, ref, when)))
    preset = _fit_preset(info, measured, ref, when)
    if c.skipped:
        preset["description"] += (
            f" Quick calibration: {', '.join(c.skipped)} not measured within its "
            f"{c.time_limit_s:g} s limit (built-in figures kept)."
        )
    c.raw.update(
        device=info.name,
        date=when,
        quick=quick,
        sm_count=info.sm_count,
        seconds=round(time.monotonic() - c.started, 1),
        skipped=c.skipped,
    )
    if progress is not None:
        progress(1.0)
    return preset, c.raw


def _optional_probes(
    c: _Calibration, be: CudaBackend, info: DeviceInfo, ref: int
) -> dict[str, Any]:
    """The probes a preset can do without (the built-in figures stand in), most useful first."""
    from swimlanes.engine.bands import FITTED_MODEL_ERROR
    from swimlanes.gpu.calibrate_spread import measure_spread  # run-to-run spread: bands

    out: dict[str, Any] = {}
    if not c.over_time("spread"):
        # The host's run-to-run spread, and the model's own error (fitted on the benchmark).
        spread = measure_spread(be, quick=c.quick, cancel=c.cancel)
        out["spread"] = {**spread, **FITTED_MODEL_ERROR}
    if not c.over_time("bidirectional copies"):
        out.update(c.bidirectional(ref))
    if not c.over_time("copy order"):
        out["copy_order"] = c.copy_order(64 * MB)
    if not c.over_time("grid rates"):
        out.update(c.grid_rates(info.sm_count))
    if not c.over_time("host function latency"):
        out.update(c.host_func_latency())
    if not c.over_time("hardware queues"):
        out.update(c.hardware_queues())
    if not c.over_time("residency"):
        residency = c.residency(info.sm_count, info.max_threads_per_sm, info.max_blocks_per_sm)
        c.raw["residency_matches_model"] = residency["all_match"]
    return out


def _fit_preset(info: DeviceInfo, measured: dict[str, Any], ref: int, when: str) -> dict:
    """The preset: the built-in one of this GPU (if any) with every measured figure put in."""
    from swimlanes.engine.preset_model import FITTED_ROOFLINE
    from swimlanes.engine.presets import DevicePreset, get_preset

    name = preset_name(info.name)
    from swimlanes.engine import preset_names

    built_in = name in preset_names()
    fields = (get_preset(name) if built_in else DevicePreset(name=name)).to_dict()
    table = measured["bandwidth_table"]
    fields.update(FITTED_ROOFLINE)  # the streaming kernel's own figures, the same everywhere
    fields.update(
        measured,
        name=name,
        description=(
            f"{info.name} calibrated by `swimlanes calibrate` on {when}: copy rates per size, "
            "API costs as the Numba executor makes the calls (with CUPTI tracing on, as "
            "`swimlanes run` measures), launch, dependency and sync return latencies, "
            "bidirectional copy costs, SM limits."
        ),
        sm_count=info.sm_count,
        max_threads_per_sm=info.max_threads_per_sm,
        max_blocks_per_sm=info.max_blocks_per_sm,
        copy_latency_us=round(table["h2d_pinned"][0][0] / table["h2d_pinned"][0][1] / 1000.0, 3),
        # The driver's staging chunks, as measured on H100 and H200 hosts (driver 580): a
        # pageable H2D's DMA started once 1 MiB was staged, and a pageable D2H of up to 2 MiB
        # ran at the pinned rate, beyond that at the host's copy-out rate.
        pageable_h2d_chunk_bytes=PAGEABLE_H2D_CHUNK,
        pageable_d2h_chunk_bytes=PAGEABLE_D2H_CHUNK,
        issue_cost_us={**fields.get("issue_cost_us", {}), **measured["issue_cost_us"]},
        **{f"{key}_gbps": _gbps_at(table[key], ref) for key in table if key in _RATE_KINDS},
    )
    return DevicePreset.from_dict(fields).to_dict()  # validates every figure


def _gap_after(tl: Timeline, row: int) -> float:
    """Microseconds from the end of op ``row`` to the start of op ``row + 1``."""
    _dur(tl, row), _dur(tl, row + 1)  # both measured, or a clear error
    return (int(tl.start[row + 1]) - int(tl.end[row])) / 1000.0


def _priority_range(be: CudaBackend) -> tuple[int, int]:
    """(least, greatest) stream priority; the simulator backend reports CUDA's usual 0, -5."""
    drv = getattr(be, "drv", None)
    if drv is None:
        return 0, -5
    # Only the real backend has a driver, and with it check() (not part of CudaBackend).
    call = drv.cuCtxGetStreamPriorityRange()
    lo, hi = be.check(call, "cuCtxGetStreamPriorityRange")  # type: ignore[attr-defined]
    return int(lo), int(hi)
