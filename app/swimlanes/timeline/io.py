"""Reading trace-like files safely, saved measured runs, and opening any timeline-like file.

A run file is ``{"format": "swimlanes-run", "version": 1, "timeline": {...}, "pipeline": {...}
| null}``: the measured timeline (``swimlanes-timeline`` v1) with the pipeline it measured, so
reopening it shows both.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swimlanes.model.document import OP_KINDS, Pipeline
from swimlanes.model.io import write_text_atomic
from swimlanes.model.validate import PipelineError, pipeline_from_dict
from swimlanes.timeline.timeline import TIMELINE_FORMAT, Timeline

RUN_FORMAT = "swimlanes-run"
RUN_VERSION = 1
#: Decompressed size above which a trace is refused (before it exhausts memory).
DEFAULT_MAX_BYTES = 2 * 1024**3
_CHUNK = 16 * 1024 * 1024

Progress = Callable[[float], None] | None
Cancel = Callable[[], bool] | None


class TraceError(ValueError):
    """A trace that cannot be opened; the message names what is wrong and where."""


class TraceCancelled(TraceError):
    """Loading was cancelled through the ``cancel`` callback (a TraceError, so that callers
    that handle bad files also handle a cancel)."""

    def __init__(self, message: str = "loading cancelled") -> None:
        super().__init__(message)


def trace_name(path: str | Path) -> str:
    """A file's name without ``.gz`` and ``.json``, to title a timeline opened from it."""
    name = Path(path).name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return name


# -- reading ------------------------------------------------------------------------------------
def read_trace_text(
    path: str | Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Progress = None,
    cancel: Cancel = None,
) -> str:
    """The file's text, gunzipped when it starts with the gzip magic bytes.

    Decompression runs in chunks and stops with a :class:`TraceError` as soon as the output
    passes ``max_bytes`` (the gzip footer's size field is not trusted).
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        with p.open("rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
            f.seek(0)
            data = (
                _read_gzip(f, size, max_bytes, progress, cancel)
                if gzipped
                else _read_plain(f, size, max_bytes)
            )
    except FileNotFoundError:
        raise TraceError("no such file") from None
    except IsADirectoryError:
        raise TraceError("is a folder, not a trace file") from None
    except OSError as err:
        raise TraceError(f"cannot read it: {err.strerror or err}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TraceError(f"not UTF-8 text (byte {err.start})") from None


def _read_plain(f: Any, size: int, max_bytes: int) -> bytes | bytearray:
    if size > max_bytes:
        raise TraceError(f"file is {size:,} bytes, over the {max_bytes:,}-byte limit")
    return f.read()


def _read_gzip(f: Any, size: int, max_bytes: int, progress: Progress, cancel: Cancel) -> bytearray:
    data = bytearray()
    total = 0
    try:
        with gzip.GzipFile(fileobj=f, mode="rb") as gz:
            # Never ask for more than one byte past the limit, so a bomb stops right there.
            while chunk := gz.read(min(_CHUNK, max_bytes + 1 - total)):
                total += len(chunk)
                if total > max_bytes:
                    raise TraceError(
                        f"gzip expands past the {max_bytes:,}-byte limit; refusing to load it"
                    )
                data += chunk
                if cancel and cancel():
                    raise TraceCancelled()
                if progress and size:
                    progress(0.3 * min(f.tell() / size, 1.0))
    except EOFError:
        raise TraceError("truncated gzip stream") from None
    except (gzip.BadGzipFile, zlib.error) as err:
        raise TraceError(f"corrupt gzip stream: {err}") from None
    return data


def run_to_dict(timeline: Timeline, pipeline: Pipeline | None = None) -> dict[str, Any]:
    """The JSON form of a saved run."""
    return {
        "format": RUN_FORMAT,
        "version": RUN_VERSION,
        "timeline": timeline.to_dict(),
        "pipeline": pipeline.to_dict() if pipeline is not None else None,
    }


def save_run(path: str | Path, timeline: Timeline, pipeline: Pipeline | None = None) -> None:
    """Save a measured run (and the pipeline it measured) atomically."""
    text = json.dumps(run_to_dict(timeline, pipeline), separators=(",", ":"))
    write_text_atomic(path, text + "\n")


def run_from_dict(data: Any) -> tuple[Timeline, Pipeline | None]:
    """Inverse of :func:`run_to_dict`; also accepts a bare ``swimlanes-timeline`` object.

    Raises :class:`TraceError` (a ValueError) naming what is wrong.
    """
    if not isinstance(data, dict):
        raise TraceError("not a swimlanes run: expected a JSON object")
    fmt = data.get("format")
    if fmt == TIMELINE_FORMAT:
        return _timeline(data), None
    if fmt != RUN_FORMAT:
        raise TraceError(f"not a swimlanes run (format is {fmt!r})")
    if data.get("version") != RUN_VERSION:
        raise TraceError(
            f"unsupported run version {data.get('version')!r} (this Swimlanes reads {RUN_VERSION})"
        )
    if "timeline" not in data:
        raise TraceError("run file has no 'timeline'")
    timeline = _timeline(data["timeline"])
    pipeline = None
    if data.get("pipeline") is not None:
        try:
            pipeline = pipeline_from_dict(data["pipeline"])
        except PipelineError as err:
            raise TraceError(f"run file's pipeline: {err}") from None
    return timeline, pipeline


def _timeline(data: Any) -> Timeline:
    try:
        tl = Timeline.from_dict(data)
    except (ValueError, OverflowError) as err:
        raise TraceError(f"malformed timeline: {err}") from None
    _check_refs(tl)
    return tl


def _check_refs(tl: Timeline) -> None:
    """Refuse indexes that point outside the timeline (they would fail later, in a view)."""
    n = len(tl)
    checks = (
        ("kind", tl.kind, len(OP_KINDS)),
        ("stream", tl.stream, len(tl.stream_names)),
        ("engine", tl.engine, len(tl.engine_names)),
    )
    for name, col, size in checks:
        low = 0 if name == "kind" else -1
        if len(col) and (col.min() < low or col.max() >= size):
            raise TraceError(f"malformed timeline: a {name} index is out of range")
    for name, col in (("src", tl.dep_src), ("dst", tl.dep_dst)):
        if len(col) and (col.min() < 0 or col.max() >= n):
            raise TraceError(f"malformed timeline: a dependency {name} row is out of range")
    if not (len(tl.dep_src) == len(tl.dep_dst) == len(tl.dep_kind)):
        raise TraceError("malformed timeline: dependency lists differ in length")


def _read_json(path: str | Path, max_bytes: int) -> Any:
    text = read_trace_text(path, max_bytes=max_bytes)
    try:
        return json.loads(text)
    except RecursionError:
        raise TraceError("JSON nested too deeply") from None
    except json.JSONDecodeError as err:
        raise TraceError(
            f"not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}"
        ) from None


def load_run(
    path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[Timeline, Pipeline | None]:
    """Open a saved run (or a bare ``swimlanes-timeline`` file, gzipped or not)."""
    timeline, pipeline = run_from_dict(_read_json(path, max_bytes))
    if not timeline.name:
        timeline.name = trace_name(path)
    return timeline, pipeline


def _head_format(text: str) -> str | None:
    """The ``format`` of a swimlanes file, read from the first key (as this package writes it)."""
    head = text[:200].lstrip()
    for fmt in (RUN_FORMAT, TIMELINE_FORMAT):
        if head.startswith("{") and f'"format":"{fmt}"' in head.replace(" ", ""):
            return fmt
    return None


def load_timeline_any(
    path: str | Path,
    *,
    progress: Progress = None,
    cancel: Cancel = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> tuple[Timeline, Pipeline | None]:
    """Open a swimlanes run, a swimlanes timeline, a Chrome trace or a Kineto trace (any of
    them gzipped or not) and return its timeline and, for runs, the pipeline.

    Raises :class:`TraceError` with a clear message for anything else.
    """
    text = read_trace_text(path, max_bytes=max_bytes, progress=progress, cancel=cancel)
    if _head_format(text) == RUN_FORMAT:
        try:
            data = json.loads(text)
        except RecursionError:
            raise TraceError("JSON nested too deeply") from None
        except json.JSONDecodeError as err:
            raise TraceError(f"not valid JSON: {err.msg} at line {err.lineno}") from None
        timeline, pipeline = run_from_dict(data)
    else:
        from swimlanes.timeline.trace_import import parse_trace_text  # it imports this module

        timeline, pipeline = parse_trace_text(text, progress=progress, cancel=cancel), None
    if not timeline.name:
        timeline.name = trace_name(path)
    if progress:
        progress(1.0)
    return timeline, pipeline
