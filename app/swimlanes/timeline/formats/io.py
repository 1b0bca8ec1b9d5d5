"""Saved measured runs, and opening any timeline-like file (a run, a timeline, a Chrome or
Kineto trace, gzipped or not).

The run document is in :mod:`~swimlanes.timeline.formats.run_format`, the shared reading
(errors, limits, chunked text) in :mod:`~swimlanes.timeline.formats.trace_source`; the names
callers catch or pass are also importable from here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swimlanes.model.atomic_write import write_text_atomic
from swimlanes.model.document import Pipeline
from swimlanes.timeline.formats.run_format import (
    RUN_FORMAT,
    RUN_VERSION,
    run_from_dict,
    run_to_dict,
)
from swimlanes.timeline.formats.trace_import import load_timelines
from swimlanes.timeline.formats.trace_json import JsonStream, parse_document
from swimlanes.timeline.formats.trace_source import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_KEPT,
    Cancel,
    Progress,
    TraceCancelled,
    TraceError,
    text_chunks,
    trace_name,
)
from swimlanes.timeline.timeline import Timeline

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_KEPT",
    "RUN_FORMAT",
    "RUN_VERSION",
    "TraceCancelled",
    "TraceError",
    "load_run",
    "load_timeline_any",
    "load_timelines_any",
    "run_from_dict",
    "run_to_dict",
    "save_run",
    "trace_name",
]


def save_run(path: str | Path, timeline: Timeline, pipeline: Pipeline | None = None) -> None:
    """Save a measured run (and the pipeline it measured) atomically."""
    text = json.dumps(run_to_dict(timeline, pipeline), separators=(",", ":"))
    write_text_atomic(path, text + "\n")


def load_run(
    path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_kept: int = DEFAULT_MAX_KEPT
) -> tuple[Timeline, Pipeline | None]:
    """Open a saved run (or a bare ``swimlanes-timeline`` file, gzipped or not)."""

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
    return load_timelines(
        path, progress=progress, cancel=cancel, max_bytes=max_bytes, max_kept=max_kept
    )
