"""Measure the links between this machine's GPUs and NCCL's collectives, for a multi-GPU preset.

Every measurement is a generated pipeline run through the multi-device executor (so the calls
are those ``swimlanes run`` makes, timed by the same back end):

* peer copies per ordered GPU pair, 4 KB .. 1 GB, each alone (the copy, then a stream sync):
  ``link_latency_us`` from the 4 KB copies, ``link_gbps`` the median rate of copies of 256 MB
  and more after the latency (with more than 4 GPUs, only the pairs with GPU 0 are measured);
* all_reduce, reduce_scatter and all_gather over all GPUs, 1 KB .. 1 GB, each alone, a call's
  time being its last-arriving rank's span (the others' spans also hold their wait for it):
  ``nccl_latency_us`` from the calls of 16 KB and less, ``nccl_bus_gbps`` the median bus
  bandwidth (nccl-tests' busbw: bytes x factor / (time - latency), factor 2(n-1)/n for
  all-reduce, (n-1)/n for the others) of calls of 64 MB and more;
* ``nccl_channels``: the channel count NCCL prints when it makes a communicator (its INFO log,
  ``NCCL_DEBUG=INFO``: "... coll channels ..."), the number of SMs each collective's kernel
  occupies (one block per channel). Cross-checked (``raw["sm_cost"]``) by a kernel of known
  SM-bound time run alone and then beside a 1 GB all-reduce: SMs x (1 - alone / beside) is
  what NCCL really keeps from kernels; that figure is used where the log says nothing.

The per-call host cost of a peer copy and of each collective goes into ``issue_cost_us``. The
whole calibration stays under a minute on a 2-GPU machine (about 20 s on 2 H200s).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from swimlanes.gpu.errors import GpuError
from swimlanes.model.document import Communicator, Device, Op, Pipeline, Stream
from swimlanes.timeline.timeline import NO_TIME, Timeline

KB, MB, GB = 1 << 10, 1 << 20, 1 << 30
COPY_SIZES = [4 * KB * 4**i for i in range(10)]  # 4 KB .. 1 GB
NCCL_SIZES = [KB * 4**i for i in range(11)]  # 1 KB .. 1 GB
QUICK_COPY_SIZES = [4 * KB, 256 * KB, 16 * MB, 256 * MB]
QUICK_NCCL_SIZES = [KB, 16 * KB, 1 * MB, 64 * MB, 256 * MB]
KINDS = ("all_reduce", "reduce_scatter", "all_gather")
#: Pairs measured: all of them up to this many GPUs, else those with GPU 0.
ALL_PAIRS_UP_TO = 4


def bus_factor(kind: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor: what each rank's links carry per buffer byte."""
    if n <= 1:
        return 1.0
    return 2.0 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n


def _pipeline(name: str, n: int, program: list[Op], comm: bool = False) -> Pipeline:
    names = [f"gpu{d}" for d in range(n)]
    return Pipeline(
        name=name,
        devices=[Device(x) for x in names],
        streams=[Stream(f"s{d}", "non_blocking", 0, device=x) for d, x in enumerate(names)],
        communicators=[Communicator("all", names)] if comm else [],
        program=program,
    )


def copy_program(n: int, src: int, dst: int, sizes: list[int]) -> Pipeline:
    """Peer copies ``src`` -> ``dst`` of each size, one at a time."""
    program: list[Op] = []
    for size in sizes:
        program.append(
            Op("peer_copy", stream=f"s{src}", bytes=size, src_device=f"gpu{src}",
               dst_device=f"gpu{dst}")
        )  # fmt: skip
        program.append(Op("stream_sync", stream=f"s{src}"))
    return _pipeline(f"peer copy gpu{src}->gpu{dst}", n, program)


def collective_program(n: int, kind: str, sizes: list[int]) -> Pipeline:
    """One ``kind`` of each size over all GPUs, one at a time (each GPU waits for its own)."""
    program: list[Op] = []
    for size in sizes:
        for d in range(n):
            program.append(Op(kind, stream=f"s{d}", bytes=size, communicator="all"))
        for d in range(n):
            program.append(Op("stream_sync", stream=f"s{d}"))
    return _pipeline(kind, n, program, comm=True)


def sm_cost_program(n: int, sms: int, waves: int = 10, block_us: float = 100.0) -> Pipeline:
    """A kernel of known SM-bound time on GPU 0 (``waves`` rounds of 256-thread blocks, 8 per
    SM, ``block_us`` each), alone, then beside a 1 GB all-reduce over all GPUs: how much longer
    it takes there tells how many SMs NCCL's kernel keeps from it."""
    kernel = Op("kernel", stream="k0", blocks=8 * sms * waves, threads=256, block_us=block_us)
    program: list[Op] = [kernel, Op("stream_sync", stream="k0")]
    program += [Op("all_reduce", stream=f"s{d}", bytes=GB, communicator="all") for d in range(n)]
    program += [kernel.copy(), Op("stream_sync", stream="k0")]
    program += [Op("stream_sync", stream=f"s{d}") for d in range(n)]
    p = _pipeline("NCCL's SMs", n, program, comm=True)
    p.streams.append(Stream("k0", "non_blocking", 0, device="gpu0"))
    return p


def sms_lost(tl: Timeline, sms: int) -> dict[str, Any]:
    """SMs the all-reduce kept from the kernel: sms x (1 - alone / beside), where the kernel
    ran wholly inside the all-reduce."""
    kernels = [r for r in range(len(tl)) if tl.op_kind(r) == "kernel"]
    reduce0 = next(r for r in range(len(tl)) if tl.op_kind(r) == "all_reduce")
    alone, beside = (int(tl.end[r]) - int(tl.start[r]) for r in kernels[:2])
    inside = tl.start[kernels[1]] >= tl.start[reduce0] and tl.end[kernels[1]] <= tl.end[reduce0]
    return {
        "kernel_alone_us": round(alone / 1e3, 3),
        "kernel_beside_all_reduce_us": round(beside / 1e3, 3),
        "all_reduce_us": round((int(tl.end[reduce0]) - int(tl.start[reduce0])) / 1e3, 3),
        "inside": bool(inside),
        "sms_lost": round(sms * max(0.0, 1.0 - alone / beside), 1),
    }


def _sm_count() -> int:
    """GPU 0's SM count from the driver (no context needed)."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        value = ctypes.c_int(0)
        lib.cuInit(0)
        lib.cuDeviceGetAttribute(ctypes.byref(value), 16, 0)  # MULTIPROCESSOR_COUNT
        return value.value
    except (OSError, AttributeError):
        return 0


def _spans(tl: Timeline, kind: str) -> list[tuple[int, float, float]]:
    """(bytes, device us, host call us) of each ``kind`` row with a measured span."""
    out = []
    for r in range(len(tl)):
        if tl.op_kind(r) != kind or tl.start[r] == NO_TIME or tl.end[r] == NO_TIME:
            continue
        dev = (int(tl.end[r]) - int(tl.start[r])) / 1000.0
        host = (int(tl.issue_end[r]) - int(tl.issue_start[r])) / 1000.0
        out.append((int(tl.bytes[r]), dev, host))
    return out


def per_instance(rows: list[tuple[int, float, float]], n: int) -> list[tuple[int, float, float]]:
    """One row per collective call from its ``n`` ranks' rows (consecutive in the program):
    the shortest span, the rank that arrived last (the others' spans also hold their wait
    for it), and the median host cost."""
    out = []
    for i in range(0, len(rows) - n + 1, n):
        group = rows[i : i + n]
        out.append((group[0][0], min(r[1] for r in group), float(np.median([r[2] for r in group]))))
    return out


def fit_link(rows: list[tuple[int, float, float]]) -> dict[str, float]:
    """Latency (the smallest copies' time) and bandwidth (large copies, latency taken off)."""
    small = [us for b, us, _ in rows if b <= 16 * KB]
    latency = float(np.median(small)) if small else 0.0
    rates = [b / ((us - latency) * 1e3) for b, us, _ in rows if b >= 256 * MB and us > latency]
    if not rates:
        rates = [b / (us * 1e3) for b, us, _ in rows if us > 0]
    return {"link_latency_us": round(latency, 3), "link_gbps": round(float(np.median(rates)), 2)}


def fit_nccl(per_kind: dict[str, list[tuple[int, float, float]]], n: int) -> dict[str, float]:
    """Per-call latency and bus bandwidth of all the collectives measured together."""
    small = [us for rows in per_kind.values() for b, us, _ in rows if b <= 16 * KB]
    latency = float(np.median(small)) if small else 0.0
    rows = [(kind, b, us) for kind, rs in per_kind.items() for b, us, _ in rs]
    # Large calls (or, where none was measured, the largest): latency is a small part there.
    floor = min(64 * MB, max((b for _, b, _ in rows), default=0))
    bus = [
        b * bus_factor(kind, n) / ((us - latency) * 1e3)
        for kind, b, us in rows
        if b >= floor and us > latency
    ]
    return {
        "nccl_latency_us": round(latency, 3),
        "nccl_bus_gbps": round(float(np.median(bus)), 2) if bus else 0.0,
    }


def nccl_channels_from_log(text: str) -> int:
    """NCCL's collective channel count from its INFO log (0 when it does not say)."""
    counts = [int(m) for m in re.findall(r"(\d+) coll channels", text)]
    if not counts:
        counts = [int(m) for m in re.findall(r"Channel \d+/(\d+)", text)]
    return max(counts) if counts else 0


def _start_nccl_log() -> str | None:
    """Ask NCCL (before its first communicator in this process) to log its set-up to a file;
    the file's path, or None when NCCL was already set up or the user chose its logging."""
    if "NCCL_DEBUG" in os.environ:
        return os.environ.get("NCCL_DEBUG_FILE")
    path = os.path.join(tempfile.mkdtemp(prefix="swimlanes-nccl-"), "nccl.log")
    os.environ.update(NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,GRAPH", NCCL_DEBUG_FILE=path)
    return path


class _Links:
    """One links calibration: runs the programs through the executor, keeps the raw tables."""

    def __init__(self, gpus: int, repeat: int, steps: int, progress: Any, cancel: Any) -> None:
        self.gpus, self.repeat, self.steps = gpus, repeat, steps
        self.progress, self.cancel = progress, cancel
        self.done = 0
        self.raw: dict[str, Any] = {"gpus": gpus, "pairs": {}, "collectives": {}}
        self.issue: dict[str, list[float]] = {}

    def run(self, p: Pipeline) -> Timeline:
        from swimlanes.gpu.executor import execute

        tl = execute(p, repeat=self.repeat, warmup=1, cancel=self.cancel)
        self.done += 1
        if self.progress is not None:
            self.progress(min(1.0, self.done / self.steps))
        return tl

    def pairs(self, pairs: list[tuple[int, int]], sizes: list[int]) -> dict[str, Any]:
        """Peer copies per ordered pair: the median pair's latency and bandwidth, the link."""
        links: list[dict[str, float]] = []
        for a, b in pairs:
            tl = self.run(copy_program(self.gpus, a, b, sizes))
            rows = _spans(tl, "peer_copy")
            links.append(fit_link(rows))
            self.issue.setdefault("peer_copy", []).extend(h for _, _, h in rows)
            self.raw["pairs"][f"gpu{a}->gpu{b}"] = {
                **links[-1],
                "link_names": tl.link_names,
                "table": [[n, round(us, 3), round(n / (us * 1e3), 3)] for n, us, _ in rows],
            }
            self.raw.setdefault("backend", tl.meta.get("backend"))
            self.raw.setdefault("peer_access", {}).update(tl.meta.get("peer_access", {}))
        if not links:
            return {}
        names = " ".join(n for p in self.raw["pairs"].values() for n in p["link_names"])
        # Named by NVML where it is there; a link it cannot name is taken as PCIe (said so).
        self.raw["link_kind_source"] = "NVML" if "NVLink" in names or "PCIe" in names else "assumed"
        return {
            "link_latency_us": round(float(np.median([x["link_latency_us"] for x in links])), 3),
            "link_gbps": round(float(np.median([x["link_gbps"] for x in links])), 2),
            "link": "nvlink" if "NVLink" in names else "pcie",
        }

    def collectives(self, sizes: list[int]) -> dict[str, Any]:
        """Each collective of each size over all GPUs: per-call latency and bus bandwidth."""
        n, per_kind = self.gpus, {}
        for kind in KINDS:
            tl = self.run(collective_program(n, kind, sizes))
            per_kind[kind] = per_instance(_spans(tl, kind), n)
            self.issue.setdefault(kind, []).extend(h for _, _, h in per_kind[kind])
            self.raw["collectives"][kind] = [
                [b, round(us, 3), round(b * bus_factor(kind, n) / (us * 1e3), 3)]
                for b, us, _ in per_kind[kind]
            ]
            self.raw["nccl"] = tl.meta.get("nccl")
            self.raw["data_check_ok"] = self.raw.get("data_check_ok", True) and bool(
                tl.meta.get("data_check", {}).get("ok")
            )
        self.raw["bus_gbps_per_kind"] = {
            k: fit_nccl({k: v}, n)["nccl_bus_gbps"] for k, v in per_kind.items()
        }
        return fit_nccl(per_kind, n)

    def channels(self, log: str | None) -> int:
        """NCCL's channel count from its log, cross-checked by the SMs a large all-reduce keeps
        from a kernel (used where the log says nothing)."""
        channels = nccl_channels_from_log(_read(log))
        self.raw["nccl_channels_source"] = "NCCL INFO log" if channels else "not found"
        sms = _sm_count() if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" else 0
        if self.gpus < 2 or not sms or (self.cancel is not None and self.cancel()):
            return channels
        try:
            cost = sms_lost(self.run(sm_cost_program(self.gpus, sms)), sms)
        except GpuError as err:  # a cross-check: the figures stand without it
            cost = {"error": str(err), "inside": False}
        self.raw["sm_cost"] = {"sms": sms, **cost}
        if not channels and cost["inside"]:
            channels = round(cost["sms_lost"])
            self.raw["nccl_channels_source"] = "SMs a 1 GB all-reduce kept from a kernel"
        return channels


def calibrate_links(
    *,
    gpus: int,
    quick: bool = False,
    repeat: int = 3,
    progress: Callable[[float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Measure ``gpus`` GPUs' links and collectives: (preset fields, raw measurements)."""
    if gpus < 1:
        raise GpuError("no GPU to calibrate links on")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off
    log = _start_nccl_log()
    started = time.monotonic()
    pairs = [(a, b) for a in range(gpus) for b in range(gpus) if a != b]
    if gpus > ALL_PAIRS_UP_TO:
        pairs = [(a, b) for a, b in pairs if 0 in (a, b)]
    c = _Links(gpus, repeat, len(pairs) + len(KINDS) + 1, progress, cancel)
    fields: dict[str, Any] = {"gpus": gpus}
    fields.update(c.pairs(pairs, QUICK_COPY_SIZES if quick else COPY_SIZES))
    fields.update(c.collectives(QUICK_NCCL_SIZES if quick else NCCL_SIZES))
    fields["nccl_channels"] = c.channels(log)
    fields["issue_cost_us"] = {k: round(float(np.median(v)), 3) for k, v in c.issue.items() if v}
    c.raw.update(
        fields=fields,
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        seconds=round(time.monotonic() - started, 1),
        quick=quick,
    )
    if progress is not None:
        progress(1.0)
    return fields, c.raw


def _read(path: str | None) -> str:
    if not path or not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def apply_links(preset: dict[str, Any], fields: dict[str, Any], description: str) -> dict:
    """``preset`` (a preset dict) with the measured link and NCCL figures put in."""
    from swimlanes.engine.presets import DevicePreset

    out = dict(preset)
    costs = {**out.get("issue_cost_us", {}), **fields.get("issue_cost_us", {})}
    out.update({k: v for k, v in fields.items() if k != "issue_cost_us"}, issue_cost_us=costs)
    out["description"] = (out.get("description", "") + " " + description).strip()
    return DevicePreset.from_dict(out).to_dict()  # validates every figure
