"""Capture a Python program's CUDA work with CUPTI: ``swimlanes capture -- python prog.py``.

The program runs in this process (``runpy``), so PyTorch, CuPy and Numba work as they would
alone; CUPTI records its runtime and driver API calls (with their host threads), kernels,
copies, memsets, synchronizations, event records and stream creations. Before it starts, one
256-byte memset on the legacy default stream tells which CUPTI stream id that stream has (the
program's "default stream"). The records become a trace in PyTorch profiler layout
(:mod:`swimlanes.timeline.formats.cupti_trace`), which Swimlanes opens as a measurement and rebuilds as a
pipeline (:mod:`swimlanes.timeline.reconstruct`).

A program can mark the part to keep: ``with swimlanes.gpu.capture.region("step"): ...``
records when the region began and ended (nothing happens outside a capture), and ``--range
step:3`` keeps the calls made during its third occurrence (``--range step``: from the first
start to the last end), with their GPU work, so that a training loop's warm-up stays out.
NVTX ranges the program already marks (``torch.cuda.nvtx.range_push("step")`` /
``range_pop``, ``nvtx.annotate``, ``nvtxRangeStartA`` / ``End``) count as regions too: the
capture points NVTX at CUPTI (``NVTX_INJECTION64_PATH``, unless the environment sets it) and
records CUPTI's marker activity, so ``--range`` works on programs that were never changed for
Swimlanes.
"""

from __future__ import annotations

import contextlib
import functools
import os
import runpy
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from swimlanes.gpu.errors import GpuError
from swimlanes.timeline.formats.cupti_trace import capture_trace

_KINDS = ("RUNTIME", "DRIVER", "CONCURRENT_KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION",
          "CUDA_EVENT", "STREAM", "MARKER")  # fmt: skip
#: Regions the captured program marked: (name, start, end) in CUPTI's clock (ns).
_regions: list[tuple[str, int, int]] = []
_active: dict[str, Any] = {}


@contextlib.contextmanager
def region(name: str) -> Iterator[None]:
    """Mark a region of the program (one iteration, say) for ``swimlanes capture --range``;
    does nothing when the program is not being captured."""
    cupti = _active.get("cupti")
    if cupti is None:
        yield
        return
    start = int(cupti.get_timestamp())
    try:
        yield
    finally:
        _regions.append((name, start, int(cupti.get_timestamp())))


class CaptureFailed(GpuError):
    """The captured program failed (its own exception or a non-zero exit)."""


@dataclass
class _Recorder:
    cupti: Any
    records: dict[str, list[dict[str, Any]]]

    def completed(self, activities: list) -> None:
        # The record objects are views into CUPTI's buffer: copy the fields out now.
        for r in activities:
            kind, fields = _fields(self.cupti, r)
            if kind is not None:
                self.records.setdefault(kind, []).append(fields)


def _enum_name(enum: Any, value: int) -> str:
    try:
        return str(enum(int(value)).name)
    except (ValueError, TypeError):
        return str(int(value))


def _fields(cupti: Any, r: Any) -> tuple[str | None, dict[str, Any]]:
    """The record's kind (our key) and the fields the trace needs."""
    k = int(r.kind)
    A = cupti.ActivityKind
    if k in (int(A.RUNTIME), int(A.DRIVER)):
        domain = "runtime" if k == int(A.RUNTIME) else "driver"
        return "api", {"domain": domain, "cbid": int(r.cbid), "correlation_id": int(r.correlation_id),
                       "start": int(r.start), "end": int(r.end), "thread_id": int(r.thread_id)}  # fmt: skip
    if k in (int(A.CONCURRENT_KERNEL), int(A.KERNEL)):
        return "kernel", {name: _plain(getattr(r, name)) for name in (
            "correlation_id", "stream_id", "start", "end", "name", "grid_x", "grid_y", "grid_z",
            "block_x", "block_y", "block_z")}  # fmt: skip
    if k == int(A.MEMCPY):
        return "memcpy", {
            "correlation_id": int(r.correlation_id), "stream_id": int(r.stream_id),
            "start": int(r.start), "end": int(r.end), "bytes": int(r.bytes),
            "copy_kind": _enum_name(cupti.ActivityMemcpyKind, r.copy_kind),
            "src_kind": _enum_name(cupti.ActivityMemoryKind, r.src_kind),
            "dst_kind": _enum_name(cupti.ActivityMemoryKind, r.dst_kind),
        }  # fmt: skip
    if k == int(A.MEMSET):
        return "memset", {"correlation_id": int(r.correlation_id), "stream_id": int(r.stream_id),
                          "start": int(r.start), "end": int(r.end), "bytes": int(r.bytes)}  # fmt: skip
    if k == int(A.SYNCHRONIZATION):
        return "sync", {"correlation_id": int(r.correlation_id), "stream_id": int(r.stream_id),
                        "start": int(r.start), "end": int(r.end), "cuda_event_id": int(r.cuda_event_id),
                        "type": _enum_name(cupti.ActivitySynchronizationType, r.type)}  # fmt: skip
    if k == int(A.CUDA_EVENT):
        return "cuda_event", {"correlation_id": int(r.correlation_id), "event_id": int(r.event_id),
                              "stream_id": int(r.stream_id)}  # fmt: skip
    if k == int(getattr(A, "MARKER", -1)):
        # cupti-python 13 names this field flags_
        flags = getattr(r, "flags_", None)
        flags = r.flags if flags is None else flags
        return "marker", {"flags": int(flags), "timestamp": int(r.timestamp), "id": int(r.id),
                          "name": _text(getattr(r, "name", None))}  # fmt: skip
    if k == int(A.STREAM):
        flag_enum = getattr(cupti, "ActivityStreamFlag", None)
        flag = _enum_name(flag_enum, r.flag) if flag_enum is not None else int(r.flag)
        return "stream", {"stream_id": int(r.stream_id), "flag": flag, "priority": int(r.priority)}
    return None, {}


def _text(v: Any) -> str:
    """A C string field of a record (None for an end marker)."""
    if v is None:
        return ""
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


#: CUPTI's marker flags (CUpti_ActivityFlag): a range's start and its end.
MARKER_START, MARKER_END = 1 << 1, 1 << 2


def nvtx_regions(markers: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    """NVTX ranges as regions (name, start, end): each start marker paired with the end marker
    of the same id (push/pop and start/end ranges alike); unclosed ranges are left out."""
    opened: dict[int, tuple[str, int]] = {}
    out = []
    for m in sorted(markers, key=lambda m: m["timestamp"]):
        if m["flags"] & MARKER_START:
            opened[m["id"]] = (m["name"], m["timestamp"])
        elif m["flags"] & MARKER_END and m["id"] in opened:
            name, start = opened.pop(m["id"])
            out.append((name, start, m["timestamp"]))
    return sorted(out, key=lambda r: r[1])


def _point_nvtx_at_cupti() -> None:
    """Make the program's NVTX calls reach CUPTI (NVTX reads this when first called)."""
    if os.environ.get("NVTX_INJECTION64_PATH"):
        return
    with contextlib.suppress(OSError), open("/proc/self/maps") as maps:
        for line in maps:
            path = line.rsplit(" ", 1)[-1].strip()
            if "libcupti.so" in os.path.basename(path):
                os.environ["NVTX_INJECTION64_PATH"] = path
                return


def _plain(v: Any) -> Any:
    return v if isinstance(v, str) else int(v)


def _legacy_stream_id(cupti: Any, recorder: _Recorder, be: Any) -> int | None:  # noqa: ANN401
    """CUPTI's id of the legacy default stream: that of a tiny memset issued on it."""
    from swimlanes.model.document import Stream

    try:
        buf = be.alloc("device", 256)
        legacy = be.create_stream(Stream("capture probe", "legacy_default"))
        be.prepare_memset(legacy, buf, 256, False)()
        be.synchronize()
        cupti.activity_flush_all(1)
        be.release(buf)
    except Exception:  # noqa: BLE001 - unknown: the trace import then guesses as for PyTorch
        return None
    sets = recorder.records.get("memset", [])
    return int(sets[-1]["stream_id"]) if sets else None


def capture_program(
    argv: list[str], *, keep: str | None = None, log: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run ``argv`` (``[script.py, args...]``, ``["-m", module, args...]`` or ``["-c", code,
    args...]``) under CUPTI and return the capture as a trace document (see
    :mod:`swimlanes.timeline.formats.cupti_trace`).

    ``keep`` is a ``--range`` (``NAME`` or ``NAME:K``). Raises :class:`CaptureFailed` when the
    program fails, GpuError when CUPTI cannot be used.
    """
    if not argv:
        raise GpuError("no program to capture: give it after --, as in -- python prog.py")
    try:
        from cupti import cupti
    except Exception as err:  # noqa: BLE001 - no wheel or no libcupti
        raise GpuError(f"CUPTI is not usable here: {err}") from None
    from swimlanes.gpu.backend import make_backend
    from swimlanes.gpu.host import this_host

    recorder = _Recorder(cupti, {})
    cupti.activity_register_callbacks(lambda: (32 << 20, 0), recorder.completed)
    kinds = [k for k in _KINDS if hasattr(cupti.ActivityKind, k)]
    for kind in kinds:
        if kind == "MARKER":  # NVTX ranges: a bonus, never a reason to refuse the capture
            with contextlib.suppress(Exception):
                cupti.activity_enable(cupti.ActivityKind.MARKER)
            continue
        cupti.activity_enable(getattr(cupti.ActivityKind, kind))
    _point_nvtx_at_cupti()
    be = make_backend()
    legacy = _legacy_stream_id(cupti, recorder, be)
    recorder.records.clear()  # the probe's own calls and memset are not the program's
    _regions.clear()
    _active["cupti"] = cupti
    started = time.time()
    try:
        _run(argv)
    finally:
        _active.clear()
        _synchronize()
        cupti.activity_flush_all(1)
        for kind in kinds:
            with contextlib.suppress(Exception):
                cupti.activity_disable(getattr(cupti.ActivityKind, kind))
    if log:
        log(f"captured {sum(map(len, recorder.records.values()))} CUPTI records in "
            f"{time.time() - started:.1f} s")  # fmt: skip
    nvtx = nvtx_regions(recorder.records.pop("marker", []))
    _regions.extend(nvtx)
    records = _kept(recorder.records, keep)
    _name_calls(cupti, records.get("api", []))
    _demangle(records.get("kernel", []))
    info = {"legacy_stream": legacy, "argv": list(argv), "device": be.device_info().name,
            "host": this_host(be).to_dict(), "range": keep,
            "nvtx_ranges": [[n, s, e] for n, s, e in nvtx],
            "date": datetime.now(UTC).isoformat(timespec="seconds")}  # fmt: skip
    return capture_trace(records, info)


def _run(argv: list[str]) -> None:
    saved = list(sys.argv)
    try:
        if argv[0] == "-m":
            if len(argv) < 2:
                raise GpuError("-m needs a module name")
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[0] == "-c":  # as python -c runs it: in a fresh __main__, argv[0] "-c"
            if len(argv) < 2:
                raise GpuError("-c needs the program's code")
            sys.argv = ["-c", *argv[2:]]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102
        else:
            sys.argv = list(argv)
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as done:
        if done.code not in (None, 0):
            raise CaptureFailed(f"the program exited with status {done.code}") from None
    except GpuError:
        raise
    except Exception as err:
        raise CaptureFailed(f"the program raised {type(err).__name__}: {err}") from err
    finally:
        sys.argv = saved


def _synchronize() -> None:
    """Wait for the program's GPU work, so that every record is complete."""
    with contextlib.suppress(Exception):
        from cuda.bindings import driver

        driver.cuCtxSynchronize()


def _kept(
    records: dict[str, list[dict[str, Any]]], keep: str | None
) -> dict[str, list[dict[str, Any]]]:
    """Only the calls made during the ``--range`` region, and what they caused."""
    if not keep:
        return records
    name, _, nth = keep.partition(":")
    spans = [(s, e) for n, s, e in _regions if n == name]
    if not spans:
        marked = sorted({n for n, _, _ in _regions})
        raise GpuError(
            f"--range {keep}: the program marked no region or NVTX range named {name!r}"
            + (f" (it marked: {', '.join(marked[:10])})" if marked else "")
        )
    if nth:
        if not nth.isdigit() or not 1 <= int(nth) <= len(spans):
            raise GpuError(
                f"--range {keep}: the program marked {len(spans)} regions named {name!r}"
            )
        lo, hi = spans[int(nth) - 1]
    else:
        lo, hi = spans[0][0], spans[-1][1]
    calls = [c for c in records.get("api", []) if lo <= c["start"] <= hi]
    kept_ids = {c["correlation_id"] for c in calls}
    out = {k: [r for r in v if r.get("correlation_id") in kept_ids] for k, v in records.items()}
    out["api"] = calls
    out["stream"] = records.get("stream", [])
    return out


def _name_calls(cupti: Any, calls: list[dict[str, Any]]) -> None:
    domains = {
        "runtime": cupti.CallbackDomain.RUNTIME_API,
        "driver": cupti.CallbackDomain.DRIVER_API,
    }

    @functools.cache
    def name(domain: str, cbid: int) -> str:
        try:
            return str(cupti.get_callback_name(domains[domain], cbid))
        except Exception:  # noqa: BLE001 - an id this CUPTI cannot name
            return f"{domain} call {cbid}"

    for c in calls:
        c["name"] = name(c["domain"], c["cbid"])


def _demangle(kernels: list[dict[str, Any]]) -> None:
    """Kernel names as C++ declares them (c++filt, when the machine has it)."""
    tool = shutil.which("c++filt")
    names = sorted({k["name"] for k in kernels if str(k["name"]).startswith("_Z")})
    if not tool or not names:
        return
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True,
                             timeout=60, check=True).stdout.splitlines()  # fmt: skip
        if len(out) == len(names):
            plain = dict(zip(names, out, strict=True))
            for k in kernels:
                k["name"] = plain.get(k["name"], k["name"])
