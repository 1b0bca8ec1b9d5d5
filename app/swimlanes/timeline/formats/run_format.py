"""The saved-run document: ``{"format": "swimlanes-run", "version": 1, "timeline": {...},
"pipeline": {...} | null}``, the measured timeline (``swimlanes-timeline`` v1) with the pipeline
it measured, so reopening it shows both. To and from its JSON form, with every index checked.
"""

from __future__ import annotations

from typing import Any

from swimlanes.model.document import OP_KINDS, Pipeline
from swimlanes.model.validate import PipelineError, pipeline_from_dict
from swimlanes.timeline.formats.trace_source import TraceError
from swimlanes.timeline.timeline import TIMELINE_FORMAT, Timeline

RUN_FORMAT = "swimlanes-run"
RUN_VERSION = 1


def run_to_dict(timeline: Timeline, pipeline: Pipeline | None = None) -> dict[str, Any]:
    """The JSON form of a saved run."""
    return {
        "format": RUN_FORMAT,
        "version": RUN_VERSION,
        "timeline": timeline.to_dict(),
        "pipeline": pipeline.to_dict() if pipeline is not None else None,
    }


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
