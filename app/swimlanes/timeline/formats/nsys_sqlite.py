"""Nsight Systems reports exported as SQLite (``nsys export --type sqlite``), read as traces.

Nsight Systems records the same CUPTI activity that ``swimlanes capture`` records, one table per
kind: ``CUPTI_ACTIVITY_KIND_RUNTIME`` (runtime and driver API calls), ``..._KERNEL``,
``..._MEMCPY``, ``..._MEMSET``, ``..._SYNCHRONIZATION`` and ``..._CUDA_EVENT``, names in
``StringIds``, streams in ``TARGET_INFO_CUDA_STREAM``, each context's legacy default stream in
``TARGET_INFO_CUDA_CONTEXT_INFO.nullStreamId``, GPU names in ``TARGET_INFO_GPU`` and NVTX
ranges (the rebuilt ops' labels) in ``NVTX_EVENTS``. This module
reads those tables into the records a capture holds and writes them as the capture's trace
(:mod:`swimlanes.timeline.formats.cupti_trace`), so that a report opens as a measurement and
rebuilds as a pipeline exactly as a capture does, with the legacy default stream and each
stream's flags and priority known.

Enumerations (copy kind, memory kind, synchronization type, stream flag) are read from the
report's ``ENUM_*`` tables where it has them and otherwise take CUPTI's numbering. Tables are
created lazily by the exporter, so any may be missing; a report without GPU activity is refused
with a clear message. Times are the report's nanoseconds. Qt-free; stdlib ``sqlite3`` only.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from swimlanes.timeline.formats.cupti_trace import capture_trace
from swimlanes.timeline.formats.trace_source import TraceError

#: The first 16 bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"

# CUPTI's numbering, for reports whose ENUM_* tables are missing.
_COPY_KINDS = {1: "HTOD", 2: "DTOH", 3: "HTOA", 4: "ATOH", 5: "ATOA", 6: "ATOD", 7: "DTOA",
               8: "DTOD", 9: "HTOH", 10: "PTOP"}  # fmt: skip
_MEMORY_KINDS = {1: "PAGEABLE", 2: "PINNED", 3: "DEVICE", 4: "ARRAY", 5: "MANAGED",
                 6: "DEVICE", 7: "MANAGED"}  # fmt: skip
_SYNC_TYPES = {1: "EVENT_SYNCHRONIZE", 2: "STREAM_WAIT_EVENT", 3: "STREAM_SYNCHRONIZE",
               4: "CONTEXT_SYNCHRONIZE"}  # fmt: skip
_STREAM_FLAGS = {0: "DEFAULT", 1: "NON_BLOCKING", 2: "NULL"}
# What each enumeration's names end with, to read a report's own ENUM_* labels.
_COPY_NAMES = tuple(_COPY_KINDS.values())
_MEMORY_NAMES = ("PAGEABLE", "PINNED", "DEVICE", "ARRAY", "MANAGED")
_SYNC_NAMES = tuple(_SYNC_TYPES.values())
_FLAG_NAMES = ("NON_BLOCKING", "DEFAULT", "NULL")


def is_sqlite(head: bytes) -> bool:
    """Whether a file starting with ``head`` is an SQLite database."""
    return head.startswith(SQLITE_MAGIC)


def load_nsys_trace(path: str | Path) -> dict[str, Any]:
    """The trace document (Kineto layout, as a capture writes it) of an Nsight Systems SQLite
    export; :class:`TraceError` for a database that is not one or holds no GPU activity."""
    try:
        db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
    except sqlite3.Error as err:
        raise TraceError(f"cannot open the SQLite database: {err}") from None
    try:
        report = _Report(db)
        records, info = report.records(), report.info()
    except sqlite3.DatabaseError as err:
        raise TraceError(f"not a readable Nsight Systems export: {err}") from None
    finally:
        db.close()
    if not any(records[k] for k in ("kernel", "memcpy", "memset")):
        tables = ", ".join(sorted(report.tables)) or "none"
        raise TraceError(
            "no GPU activity in the Nsight Systems export (no CUPTI kernel, memcpy or memset "
            f"rows; its tables: {_short(tables)}): profile with --trace=cuda"
        )
    return capture_trace(records, info)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Report:
    """One export's tables, read into capture records (see cupti_trace.capture_trace)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        self.tables = {str(r[0]) for r in rows}
        if not self.tables:
            raise TraceError("an empty SQLite database, not an Nsight Systems export")
        self.strings = dict(self._rows("StringIds", ("id", "value")))

    def _columns(self, table: str) -> set[str]:
        return {str(r[1]) for r in self.db.execute(f'PRAGMA table_info("{table}")')}

    def _rows(self, table: str, wanted: tuple[str, ...]) -> list[tuple[Any, ...]]:
        """``wanted`` columns of ``table`` (NULL for the ones it lacks; none if no table)."""
        if table not in self.tables:
            return []
        have = self._columns(table)
        cols = ", ".join(f'"{c}"' if c in have else "NULL" for c in wanted)
        return self.db.execute(f'SELECT {cols} FROM "{table}"').fetchall()

    def _enum(self, table: str, names: tuple[str, ...], fallback: dict[int, str]) -> dict[int, str]:
        """An ENUM_* table's ids, each mapped to the one of ``names`` its name holds."""
        out = dict(fallback)
        for ident, name, label in self._rows(table, ("id", "name", "label")):
            text = f"{name or ''} {label or ''}".upper().replace(" ", "_")
            found = next((n for n in names if n in text), None)
            if found is not None and ident is not None:
                out[int(ident)] = found
        return out

    def records(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "api": self._api(),
            "kernel": self._kernels(),
            "memcpy": self._copies(),
            "memset": self._memsets(),
            "sync": self._syncs(),
            "cuda_event": self._event_records(),
            "stream": self._streams(),
        }

    def _api(self) -> list[dict[str, Any]]:
        out = []
        cols = ("start", "end", "globalTid", "correlationId", "nameId")
        for start, end, tid, corr, name_id in self._rows("CUPTI_ACTIVITY_KIND_RUNTIME", cols):
            name = str(self.strings.get(name_id, f"call {name_id}"))
            out.append(
                {"domain": "runtime" if name.startswith("cuda") else "driver",
                 "thread_id": int(tid or 0), "start": int(start), "end": int(end),
                 "correlation_id": int(corr or 0), "name": name}
            )  # fmt: skip
        return out

    def _kernels(self) -> list[dict[str, Any]]:
        cols = ("start", "end", "deviceId", "streamId", "correlationId", "demangledName",
                "shortName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")  # fmt: skip
        out = []
        for r in self._rows("CUPTI_ACTIVITY_KIND_KERNEL", cols):
            name = self.strings.get(r[5]) or self.strings.get(r[6]) or "kernel"
            grid, block = (int(v or 1) for v in r[7:10]), (int(v or 1) for v in r[10:13])
            out.append(
                {**_placed(r), "name": str(name),
                 **dict(zip(("grid_x", "grid_y", "grid_z"), grid, strict=True)),
                 **dict(zip(("block_x", "block_y", "block_z"), block, strict=True))}
            )  # fmt: skip
        return out

    def _copies(self) -> list[dict[str, Any]]:
        kinds = self._enum("ENUM_CUDA_MEMCPY_OPER", _COPY_NAMES, _COPY_KINDS)
        memory = self._enum("ENUM_CUDA_MEM_KIND", _MEMORY_NAMES, _MEMORY_KINDS)
        cols = ("start", "end", "deviceId", "streamId", "correlationId", "bytes", "copyKind",
                "srcKind", "dstKind")  # fmt: skip
        return [
            {**_placed(r), "bytes": int(r[5] or 0), "copy_kind": kinds.get(int(r[6] or 0), ""),
             "src_kind": memory.get(int(r[7] or 0), ""), "dst_kind": memory.get(int(r[8] or 0), "")}
            for r in self._rows("CUPTI_ACTIVITY_KIND_MEMCPY", cols)
        ]  # fmt: skip

    def _memsets(self) -> list[dict[str, Any]]:
        cols = ("start", "end", "deviceId", "streamId", "correlationId", "bytes")
        return [
            {**_placed(r), "bytes": int(r[5] or 0)}
            for r in self._rows("CUPTI_ACTIVITY_KIND_MEMSET", cols)
        ]

    def _syncs(self) -> list[dict[str, Any]]:
        types = self._enum("ENUM_CUPTI_SYNC_TYPE", _SYNC_NAMES, _SYNC_TYPES)
        cols = ("start", "end", "deviceId", "streamId", "correlationId", "syncType", "eventId")
        return [
            {**_placed(r), "type": types.get(int(r[5] or 0), "UNKNOWN"),
             "cuda_event_id": None if r[6] is None else int(r[6])}
            for r in self._rows("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", cols)
        ]  # fmt: skip

    def _event_records(self) -> list[dict[str, Any]]:
        cols = ("deviceId", "streamId", "correlationId", "eventId")
        return [
            {"device_id": int(d or 0), "stream_id": int(s), "correlation_id": int(c or 0),
             "event_id": int(e)}
            for d, s, c, e in self._rows("CUPTI_ACTIVITY_KIND_CUDA_EVENT", cols)
        ]  # fmt: skip

    def _streams(self) -> list[dict[str, Any]]:
        flags = self._enum("ENUM_CUPTI_STREAM_TYPE", _FLAG_NAMES, _STREAM_FLAGS)
        cols = ("streamId", "priority", "flag")
        return [
            {"stream_id": int(s), "priority": int(p or 0), "flag": flags.get(int(f or 0), "")}
            for s, p, f in self._rows("TARGET_INFO_CUDA_STREAM", cols)
        ]

    def info(self) -> dict[str, Any]:
        """The capture facts the report holds: the legacy default stream and the GPU."""
        out: dict[str, Any] = {"source": "nsys"}
        nulls = {int(r[0]) for r in self._rows("TARGET_INFO_CUDA_CONTEXT_INFO", ("nullStreamId",))}
        if len(nulls) == 1:  # one context: its legacy default stream
            out["legacy_stream"] = nulls.pop()
        ranges = [
            [str(text or self.strings.get(text_id, "")), int(start), int(end)]
            for start, end, text, text_id in self._rows(
                "NVTX_EVENTS", ("start", "end", "text", "textId")
            )
            if start is not None and end is not None and int(end) > int(start)
        ]
        if ranges:  # NVTX push/pop and start/end ranges: labels of the rebuilt ops
            out["nvtx_ranges"] = [r for r in ranges if r[0]]
        gpus = [str(r[0]) for r in self._rows("TARGET_INFO_GPU", ("name",)) if r[0]]
        if gpus:
            out["device"] = gpus[0]
            out["host"] = {"gpu": gpus[0]}
        return out


def _placed(row: tuple[Any, ...]) -> dict[str, Any]:
    """The common head of a GPU record row: start, end, device, stream, correlation."""
    start, end, device, stream, corr = row[:5]
    return {"start": int(start), "end": int(end), "device_id": int(device or 0),
            "stream_id": int(stream), "correlation_id": int(corr or 0)}  # fmt: skip
