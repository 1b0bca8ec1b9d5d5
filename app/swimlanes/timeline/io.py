"""Reading trace-like files safely, saved measured runs, and opening any timeline-like file.

A run file is ``{"format": "swimlanes-run", "version": 1, "timeline": {...}, "pipeline": {...}
| null}``: the measured timeline (``swimlanes-timeline`` v1) with the pipeline it measured, so
reopening it shows both.
"""

from __future__ import annotations

import codecs
import gzip
import json
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from swimlanes.model.atomic_write import write_text_atomic
from swimlanes.model.document import OP_KINDS, Pipeline
from swimlanes.model.validate import PipelineError, pipeline_from_dict
from swimlanes.timeline.timeline import TIMELINE_FORMAT, Timeline

RUN_FORMAT = "swimlanes-run"
RUN_VERSION = 1
#: Decompressed size above which a trace is refused (reading is streamed, so this bounds time,
#: not memory).
DEFAULT_MAX_BYTES = 2 * 1024**3
#: The most trace events import keeps (GPU ops, host calls, flows, unfinished "B" events), and
#: the most rows of a timeline or run file: what import holds in memory grows with these.
DEFAULT_MAX_KEPT = 2_000_000
#: Read at a time: small enough that ``cancel`` and ``progress`` are polled every few
#: milliseconds of parsing.
_CHUNK = 64 * 1024

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
def text_chunks(
    path: str | Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Progress = None,
    cancel: Cancel = None,
) -> Iterator[str]:
    """The file's text a chunk at a time, gunzipped when it starts with the gzip magic bytes.

    Nothing but the current chunk is held. Reading stops with a :class:`TraceError` as soon as
    the text passes ``max_bytes`` (the gzip footer's size field is not trusted); ``cancel`` is
    polled and ``progress`` told the fraction of the file read (up to 0.9) after each chunk.
    """
    try:
        f = Path(path).open("rb")  # noqa: SIM115 - closed by the ``with`` below
    except FileNotFoundError:
        raise TraceError("no such file") from None
    except IsADirectoryError:
        raise TraceError("is a folder, not a trace file") from None
    except OSError as err:
        raise TraceError(f"cannot read it: {err.strerror or err}") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        gzipped = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        if not gzipped and size > max_bytes:
            raise TraceError(f"file is {size:,} bytes, over the {max_bytes:,}-byte limit")
        source = gzip.GzipFile(fileobj=f, mode="rb") if gzipped else f
        decoder = codecs.getincrementaldecoder("utf-8")()
        total = 0
        while raw := _read_chunk(source, min(_CHUNK, max_bytes + 1 - total)):
            total += len(raw)
            if total > max_bytes:
                raise TraceError(
                    f"gzip expands past the {max_bytes:,}-byte limit; refusing to load it"
                )
            yield _utf8(decoder, raw, total - len(raw))
            if cancel and cancel():
                raise TraceCancelled()
            if progress and size:
                progress(0.9 * min(f.tell() / size, 1.0))
        _utf8(decoder, b"", total, final=True)


def _read_chunk(source: Any, n: int) -> bytes:
    try:
        return source.read(n)
    except EOFError:
        raise TraceError("truncated gzip stream") from None
    except (gzip.BadGzipFile, zlib.error) as err:
        raise TraceError(f"corrupt gzip stream: {err}") from None
    except OSError as err:
        raise TraceError(f"cannot read it: {err.strerror or err}") from None


def _utf8(decoder: Any, raw: bytes, offset: int, *, final: bool = False) -> str:
    try:
        return decoder.decode(raw, final)
    except UnicodeDecodeError as err:
        raise TraceError(f"not UTF-8 text (byte {offset + err.start})") from None


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
        return _timeline(data, ""), None
    if fmt != RUN_FORMAT:
        raise TraceError(f"not a swimlanes run (format is {fmt!r})")
    if data.get("version") != RUN_VERSION:
        raise TraceError(
            f"unsupported run version {data.get('version')!r} (this Swimlanes reads {RUN_VERSION})"
        )
    if "timeline" not in data:
        raise TraceError("run file has no 'timeline'")
    timeline = _timeline(data["timeline"], "timeline.")
    pipeline = None
    if data.get("pipeline") is not None:
        try:
            pipeline = pipeline_from_dict(data["pipeline"])
        except PipelineError as err:
            raise TraceError(f"run file's pipeline: {err}") from None
    return timeline, pipeline


def _timeline(data: Any, where: str) -> Timeline:
    """``where``: the timeline's place in the file, to name a bad value by its JSON path."""
    try:
        tl = Timeline.from_dict(data)
    except ValueError as err:
        raise TraceError(f"malformed timeline: {where}{err}") from None
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
    if len(tl.occupancy_time) != len(tl.occupancy_sms):
        raise TraceError("malformed timeline: occupancy lists differ in length")


def load_run(
    path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_kept: int = DEFAULT_MAX_KEPT
) -> tuple[Timeline, Pipeline | None]:
    """Open a saved run (or a bare ``swimlanes-timeline`` file, gzipped or not)."""
    from swimlanes.timeline.trace_json import JsonStream, parse_document  # it imports this module

    def no_events(_n: int, _event: Any) -> None:
        raise TraceError("not a swimlanes run (it is a trace)")

    stream = JsonStream(text_chunks(path, max_bytes=max_bytes))
    if stream.peek() != "{":
        raise TraceError("not a swimlanes run: expected a JSON object")
    timeline, pipeline = run_from_dict(parse_document(stream, no_events, max_rows=max_kept))
    if not timeline.name:
        timeline.name = trace_name(path)
    return timeline, pipeline


def load_timeline_any(
    path: str | Path,
    *,
    progress: Progress = None,
    cancel: Cancel = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_kept: int = DEFAULT_MAX_KEPT,
) -> tuple[Timeline, Pipeline | None]:
    """Open a swimlanes run, a swimlanes timeline, a Chrome trace or a Kineto trace (any of
    them gzipped or not) and return its timeline and, for runs, the pipeline. A Chrome trace
    that Swimlanes exported with several timelines gives its measured one (see
    :func:`load_timelines_any` for all).

    Raises :class:`TraceError` with a clear message for anything else.
    """
    timelines, pipeline = load_timelines_any(
        path, progress=progress, cancel=cancel, max_bytes=max_bytes, max_kept=max_kept
    )
    return timelines[0], pipeline


def load_timelines_any(
    path: str | Path,
    *,
    progress: Progress = None,
    cancel: Cancel = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_kept: int = DEFAULT_MAX_KEPT,
) -> tuple[list[Timeline], Pipeline | None]:
    """:func:`load_timeline_any`, but every timeline the file holds (more than one only for a
    Chrome trace exported with several): the one :func:`load_timeline_any` gives first, the
    others in the file's order."""
    from swimlanes.timeline.trace_import import load_timelines  # it imports this module

    return load_timelines(
        path, progress=progress, cancel=cancel, max_bytes=max_bytes, max_kept=max_kept
    )
