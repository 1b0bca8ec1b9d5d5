"""JSON Schema (draft 2020-12) of timeline files and saved runs, built from the loader's tables.

A timeline file (``swimlanes-timeline`` v1) is :meth:`Timeline.to_dict`'s output; a run file
(``swimlanes-run`` v1) holds one with the pipeline it measured, whose schema comes from
:mod:`swimlanes.model.schema`. Column ranges, dependency kinds and sources are the ones
:meth:`Timeline.from_dict` enforces. Left to the loader: the columns and ``labels`` all have one
row per op, and the ``stream``/``engine`` columns and dependency rows index lists that exist.
The loader skips keys it does not know here (nothing keeps them), so the schema refuses them:
a misspelt key is reported instead of silently lost. ``meta`` is free-form.
"""

from __future__ import annotations

from typing import Any

from swimlanes.model.document import OP_KINDS
from swimlanes.model.schema import DIALECT, pipeline_defs, pipeline_object, schema_id

# The loader's own per-column tables (ranges, dtypes, which columns are times), so that the
# schema cannot drift from what Timeline.from_dict accepts.
from swimlanes.timeline.columns import (
    COLUMN_RANGE,
    INT_COLUMNS,
    NO_TIME,
    SMALL_COLUMNS,
    TIME_COLUMNS,
)
from swimlanes.timeline.formats.io import DEFAULT_MAX_KEPT, RUN_FORMAT, RUN_VERSION
from swimlanes.timeline.timeline import DEP_KINDS, SOURCES, TIMELINE_FORMAT, TIMELINE_VERSION

__all__ = ["run_schema", "timeline_defs", "timeline_object", "timeline_schema"]

#: What each column holds, for editors.
_COLUMN_HELP: dict[str, str] = {
    "index": "the op's index in the program (or issue order of an imported trace)",
    "issue_start": "ns: the host API call's start",
    "issue_end": "ns: the host API call's end",
    "start": "ns: the op's start on the device",
    "end": "ns: the op's end on the device",
    "solo_ns": "ns: how long the op takes alone on the device",
    "bytes": "bytes the op moves (0: none)",
    "kind": "index into the op kinds: " + ", ".join(f"{i} {k}" for i, k in enumerate(OP_KINDS)),
    "stream": "index into stream_names (-1: no stream)",
    "engine": "index into engine_names (-1: no engine)",
    "start_spread": "ns: p90 - p10 of the device start over repetitions",
    "end_spread": "ns: p90 - p10 of the device end over repetitions",
}


def _integers(column: str, description: str = "") -> dict[str, Any]:
    """An array of integers in ``column``'s range (times may also be NO_TIME: none)."""
    low, high, _dtype = COLUMN_RANGE[column]
    if column == "kind":  # an index into OP_KINDS (the loader refuses others)
        high = len(OP_KINDS) - 1
    item: dict[str, Any] = {"type": "integer", "minimum": low, "maximum": high}
    if column in TIME_COLUMNS:
        item = {"anyOf": [item, {"const": NO_TIME}]}
        description += f" ({NO_TIME}: none)"
    out: dict[str, Any] = {"type": "array", "maxItems": DEFAULT_MAX_KEPT, "items": item}
    if description:
        out["description"] = description
    return out


def _strings(description: str, max_items: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    if max_items is not None:
        out["maxItems"] = max_items
    out["description"] = description
    return out


def _columns() -> dict[str, Any]:
    names = (*INT_COLUMNS, *SMALL_COLUMNS)
    properties = {c: _integers(c, _COLUMN_HELP[c]) for c in (*names, "start_spread", "end_spread")}
    return {
        "type": "object",
        "description": "one value per op in each column (times are integer nanoseconds)",
        "required": list(names),
        "properties": properties,
        "dependentRequired": {"start_spread": ["end_spread"], "end_spread": ["start_spread"]},
        "additionalProperties": False,
    }


def _deps() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "dependency edges between rows, drawn as arrows",
        "properties": {
            "src": _integers("dep", "the row the edge starts at"),
            "dst": _integers("dep", "the row the edge ends at"),
            "kind": {
                "type": "array",
                "maxItems": DEFAULT_MAX_KEPT,
                "items": {"enum": list(DEP_KINDS)},
            },
        },
        "additionalProperties": False,
    }


def _occupancy() -> dict[str, Any]:
    low, high, _dtype = COLUMN_RANGE["sms"]
    return {
        "type": "object",
        "description": "the SM occupancy curve: busy SMs from each time on",
        "properties": {
            "sm_count": {"type": "integer", "minimum": low, "maximum": high, "default": 0},
            "time": _integers("occupancy_time", "ns"),
            "sms": _integers("sms", "busy SMs"),
        },
        "additionalProperties": False,
    }


def _devices() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "a multi-device timeline's devices (absent: one device)",
        "required": ["names"],
        "properties": {
            "names": _strings("the devices' names"),
            "stream": _integers("device", "per stream_names entry, its device's index"),
            "engine": _integers("device", "per engine_names entry, its device's index"),
            "host": _integers("device", "per op, the device whose host thread issued it"),
            "occupancy": _integers("device", "per occupancy sample, whose SMs it counts"),
        },
        "additionalProperties": False,
    }


def _links() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "links between devices and the ops that used them (absent: none)",
        "required": ["names"],
        "properties": {
            "names": _strings("the links' names, e.g. NVLink gpu0→gpu1"),
            "op": _integers("link_op", "the row of an op that used a link over its span"),
            "link": _integers("link_id", "which link (an index into names)"),
        },
        "additionalProperties": False,
    }


def _threads() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "a program's host threads, where it has several (absent: one per device)",
        "required": ["names"],
        "properties": {
            "names": _strings("the host threads' names"),
            "device": _integers("device", "per thread, its device's index"),
            "host": _integers("device", "per op, the index of the thread that issued it"),
        },
        "additionalProperties": False,
    }


def timeline_defs() -> dict[str, Any]:
    """The ``$defs`` a timeline schema refers to."""
    return {
        "timeline_columns": _columns(),
        "timeline_deps": _deps(),
        "occupancy": _occupancy(),
        "timeline_devices": _devices(),
        "timeline_links": _links(),
        "timeline_threads": _threads(),
    }


def timeline_object() -> dict[str, Any]:
    """A timeline object (without ``$schema``, ``$id`` or ``$defs``), for embedding."""
    return {
        "type": "object",
        "required": ["format", "version", "columns", "labels", "stream_names", "engine_names"],
        "properties": {
            "$schema": {"type": "string", "description": "this schema, for editors"},
            "format": {"const": TIMELINE_FORMAT},
            "version": {"const": TIMELINE_VERSION},
            "name": {"type": "string", "default": ""},
            "source": {"enum": list(SOURCES), "default": "measured"},
            "device": {"type": "string", "default": "", "description": "the device or preset"},
            "meta": {"type": "object", "description": "free-form: how it was measured"},
            "stream_names": _strings("the streams' names, indexed by columns.stream"),
            "engine_names": _strings("the engines' names, indexed by columns.engine"),
            "labels": _strings("one label per op", DEFAULT_MAX_KEPT),
            "columns": {"$ref": "#/$defs/timeline_columns"},
            "deps": {"$ref": "#/$defs/timeline_deps"},
            "occupancy": {"$ref": "#/$defs/occupancy"},
            "devices": {"$ref": "#/$defs/timeline_devices"},
            "links": {"$ref": "#/$defs/timeline_links"},
            "threads": {"$ref": "#/$defs/timeline_threads"},
        },
        "additionalProperties": False,
    }


def timeline_schema() -> dict[str, Any]:
    """The JSON Schema of a timeline file (``swimlanes-timeline`` version 1)."""
    return {
        "$schema": DIALECT,
        "$id": schema_id("timeline", TIMELINE_VERSION),
        "title": "Swimlanes timeline",
        "description": "A simulated or measured schedule: per-op columns in integer ns.",
        **timeline_object(),
        "$defs": timeline_defs(),
    }


def run_schema() -> dict[str, Any]:
    """The JSON Schema of a saved run (``swimlanes-run`` version 1): a measured timeline and
    the pipeline it measured (or null)."""
    return {
        "$schema": DIALECT,
        "$id": schema_id("run", RUN_VERSION),
        "title": "Swimlanes measured run",
        "description": "A measured timeline and the pipeline it measured.",
        "type": "object",
        "required": ["format", "version", "timeline"],
        "properties": {
            "$schema": {"type": "string", "description": "this schema, for editors"},
            "format": {"const": RUN_FORMAT},
            "version": {"const": RUN_VERSION},
            "timeline": {"$ref": "#/$defs/timeline"},
            "pipeline": {"anyOf": [{"$ref": "#/$defs/pipeline"}, {"type": "null"}]},
        },
        "additionalProperties": False,
        "$defs": {
            "timeline": timeline_object(),
            **timeline_defs(),
            "pipeline": pipeline_object(),
            **pipeline_defs(),
        },
    }
