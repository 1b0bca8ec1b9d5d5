"""JSON Schema (draft 2020-12) of the pipeline file, built from the document's own tables.

The schema is generated, never written by hand: every enum, range and required key comes from
:mod:`swimlanes.model.document` (``OP_KINDS``, ``MAX_BYTES`` ...) and from the op-kind registry
(:mod:`swimlanes.model.op_kinds`: which keys each kind takes and requires, the same table the
validator reads), gathered in :data:`OP_KIND_FIELDS`. The shipped files in
``resources/schema/`` are this module's output (a test keeps them equal).

An editor that knows JSON Schema completes and checks a pipeline with it. It cannot say
everything the validator says; what it leaves to the loader is listed in ``$comment``s:
stream, device and communicator names must be unique and be declared where they are used
(a stream's device, a peer copy's ends, a collective's communicator and root), every member
of a communicator must make the same collective calls, a kernel's ``blocks`` times
``block_us`` is at most ``MAX_DURATION_US``, integers anywhere must fit in 64 bits, and
nesting stops at ``MAX_JSON_DEPTH``. JSON Schema also counts ``1.0`` as an integer where the
loader wants ``1``. Keys Swimlanes does not know are allowed wherever the loader keeps them
(the top level, streams, ops).
"""

from __future__ import annotations

import json
from typing import Any

from swimlanes.model.document import (
    CUDA_CALLS,
    DEFAULT_DEVICE,
    DEFAULT_STREAM,
    FORMAT_NAME,
    FORMAT_VERSION,
    HOST_MEMORY_KINDS,
    MAX_BLOCKS,
    MAX_BLOCKS_PER_SM,
    MAX_BYTES,
    MAX_COMMUNICATORS,
    MAX_DEVICE_CHARS,
    MAX_DEVICES,
    MAX_DURATION_US,
    MAX_FLOPS,
    MAX_HOST_THREADS,
    MAX_NAME_CHARS,
    MAX_OPS,
    MAX_PRIORITY,
    MAX_STREAMS,
    MAX_TEXT_CHARS,
    MAX_THREADS_PER_BLOCK,
    MIN_PRIORITY,
    OP_KINDS,
    STREAM_KINDS,
)
from swimlanes.model.op_kinds import COMMON_FIELDS, op_kind, register_layer

__all__ = [
    "DIALECT",
    "OP_FIELD_SCHEMAS",
    "OP_KIND_FIELDS",
    "pipeline_defs",
    "pipeline_object",
    "pipeline_schema",
    "schema_id",
    "schema_json",
]

DIALECT = "https://json-schema.org/draft/2020-12/schema"

#: A stream or event name, as the loader takes it.
_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_NAME_CHARS,
    # The loader refuses a name of only white space (``str.strip``).
    "pattern": r"\S",
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def schema_id(kind: str, version: int) -> str:
    """The ``$id`` of a shipped schema: a URN, so that nothing has to be fetched to use it."""
    return f"urn:swimlanes:schema:{kind}:v{version}"


def _op_field_schemas() -> dict[str, dict[str, Any]]:
    """The JSON form of each op key (the file's names: ``async``, not ``is_async``)."""
    duration = {
        "type": "number",
        "exclusiveMinimum": 0,
        "maximum": MAX_DURATION_US,
        "description": "microseconds: how long the op takes alone (overrides the device model)",
    }
    return {
        "stream": {
            **_ref("name"),
            "description": f"the stream it is enqueued on (default: {DEFAULT_STREAM!r}, the "
            "legacy default stream); must be a declared stream",
            "default": DEFAULT_STREAM,
        },
        "label": {
            "type": "string",
            "maxLength": MAX_NAME_CHARS,
            "description": "shown in the lanes, charts, tables and generated code",
        },
        "bytes": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_BYTES,
            "description": "bytes copied, set or allocated; a kernel's memory traffic",
        },
        "host_memory": {
            "enum": list(HOST_MEMORY_KINDS),
            "default": HOST_MEMORY_KINDS[0],
            "description": "the host buffer: pinned (page-locked) or pageable",
        },
        "async": {
            "type": "boolean",
            "default": True,
            "description": "false: the synchronous call (cudaMemcpy / cudaMemset)",
        },
        "duration_us": duration,
        "blocks": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_BLOCKS,
            "description": "thread blocks in the grid",
        },
        "threads": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_THREADS_PER_BLOCK,
            "description": "threads per block",
        },
        "block_us": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_DURATION_US,
            "description": "microseconds each thread block runs",
            "$comment": f"blocks * block_us must be at most {MAX_DURATION_US:g} (the loader "
            "checks it)",
        },
        "flops": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_FLOPS,
            "description": "floating-point operations (roofline timing, with bytes)",
        },
        "blocks_per_sm": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_BLOCKS_PER_SM,
            "description": "overrides how many blocks of this kernel one SM holds at once",
        },
        "event": {**_ref("name"), "description": "the event's name"},
        "call_us": {
            "type": "number",
            "minimum": 0,
            "maximum": MAX_DURATION_US,
            "description": "microseconds the call itself took on the host, as measured: "
            "replaces the device preset's cost of this call",
        },
        "copy_out_us": {
            "type": "number",
            "minimum": 0,
            "maximum": MAX_DURATION_US,
            "description": "a pageable d2h copy's host time from the end of its DMA to its "
            "call's return, as measured: replaces the preset's copy-out and return",
        },
        **_device_field_schemas(),
    }


def _device_field_schemas() -> dict[str, dict[str, Any]]:
    """The op keys that name devices and communicators (multi-device pipelines)."""
    return {
        "device": {
            **_ref("name"),
            "description": "the device whose host thread issues this host-only op (default: "
            f"the first device, {DEFAULT_DEVICE!r} when none are declared)",
        },
        "src_device": {**_ref("name"), "description": "the device copied from (default: the "
                       "stream's device)"},
        "dst_device": {**_ref("name"), "description": "the device copied to (default: the "
                       "stream's device)"},
        "communicator": {**_ref("name"), "description": "the communicator (a declared one) "
                         "whose devices take part; each member issues the same call"},
        "root": {**_ref("name"), "description": "the device whose buffer is sent (default: "
                 "the communicator's first device)"},
    }  # fmt: skip


#: The schema of each op key, whatever the kind (``duration_us`` of host work differs: >= 0).
OP_FIELD_SCHEMAS: dict[str, dict[str, Any]] = _op_field_schemas()


def _kind_fields(kind: str) -> dict[str, bool]:
    """The keys an op of ``kind`` takes (the registry's :data:`COMMON_FIELDS` and the kind's
    own ``fields``), each with whether it is required, in the order of OP_FIELD_SCHEMAS."""
    spec = op_kind(kind)
    return {
        key: key in spec.required
        for key in OP_FIELD_SCHEMAS
        if key in COMMON_FIELDS or key in spec.fields
    }


#: Which keys each op kind takes, and whether each is required.
OP_KIND_FIELDS: dict[str, dict[str, bool]] = {kind: _kind_fields(kind) for kind in OP_KINDS}
# The kinds whose every key has a schema here (a kind with a key OP_FIELD_SCHEMAS lacks would
# lose it silently: the coverage test fails instead).
register_layer(
    "schema",
    (k for k in OP_KINDS if set(op_kind(k).fields) | set(COMMON_FIELDS) <= OP_FIELD_SCHEMAS.keys()),
)


_HOST_THREAD: dict[str, Any] = {
    **_ref("name"),
    "description": "the host thread that issues this op (a declared one; default: its "
    "stream's thread, else its device's first); only a per-thread default stream's own "
    "thread may issue on it",
}


def _op_kind_schema(kind: str) -> dict[str, Any]:
    """One op kind's branch: its keys, its required keys, and ``false`` for the known keys it
    does not take (the loader refuses those, but keeps keys it does not know)."""
    fields = OP_KIND_FIELDS[kind]
    properties: dict[str, Any] = {"op": {"const": kind}}
    for key, schema in OP_FIELD_SCHEMAS.items():
        properties[key] = schema if key in fields else False
    properties["host_thread"] = _HOST_THREAD  # any op is issued by some host thread
    if kind == "host":  # host work may take no time; every other op takes some
        properties["duration_us"] = {
            "type": "number",
            "minimum": 0,
            "maximum": MAX_DURATION_US,
            "description": "microseconds of CPU work on the host thread",
        }
    out: dict[str, Any] = {
        "title": f"{kind}: {CUDA_CALLS[kind]}",
        "type": "object",
        "properties": properties,
        "required": ["op", *(key for key, required in fields.items() if required)],
    }
    if kind == "kernel":
        out["description"] = "exactly one timing: block_us, duration_us, or flops and/or bytes"
        out["oneOf"] = [
            {"required": ["block_us"]},
            {"required": ["duration_us"]},
            {"anyOf": [{"required": ["flops"]}, {"required": ["bytes"]}]},
        ]
    return out


def _stream_schema() -> dict[str, Any]:
    legacy = STREAM_KINDS[0]
    return {
        "title": "stream",
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {**_ref("name"), "description": "unique among the streams"},
            "kind": {
                "enum": list(STREAM_KINDS),
                "default": "blocking",
                "description": f"{legacy} is the implicit stream named {DEFAULT_STREAM!r}",
            },
            "priority": {
                "type": "integer",
                "minimum": MIN_PRIORITY,
                "maximum": MAX_PRIORITY,
                "default": 0,
                "description": "CUDA's convention: a lower number is a higher priority",
            },
            "device": {
                **_ref("name"),
                "description": "the device it belongs to (default: the first device)",
            },
            "host_thread": {
                **_ref("name"),
                "description": "the host thread it belongs to (a declared one of its device; "
                "default: the device's first): a per_thread_default stream is that thread's "
                "own, another stream's ops are issued by it unless an op names another",
            },
        },
        "allOf": [
            {
                "if": {"required": ["name"], "properties": {"name": {"const": DEFAULT_STREAM}}},
                "then": {"required": ["kind"], "properties": {"kind": {"const": legacy}}},
            },
            {
                "if": {
                    "required": ["kind"],
                    "properties": {"kind": {"const": legacy}},
                    "not": {"required": ["device"]},
                },
                "then": {"properties": {"name": {"const": DEFAULT_STREAM}}},
            },
            {
                "if": {"required": ["kind"], "properties": {"kind": {"const": legacy}}},
                "then": {"not": {"required": ["host_thread"]}},
            },
        ],
        "$comment": "stream names must be unique and a stream's device declared; the first "
        f"device's legacy default stream is {DEFAULT_STREAM!r}, another device's takes another "
        "name, one per device (the loader checks it)",
    }


def _op_schema() -> dict[str, Any]:
    """Any op: ``op`` picks the kind's branch."""
    return {
        "title": "op",
        "description": "one CUDA API call of the host program",
        "type": "object",
        "required": ["op"],
        "properties": {"op": {"enum": list(OP_KINDS)}},
        "allOf": [
            {
                "if": {"required": ["op"], "properties": {"op": {"const": kind}}},
                "then": _ref(f"op_{kind}"),
            }
            for kind in OP_KINDS
        ],
    }


def _device_schema() -> dict[str, Any]:
    return {
        "title": "device",
        "type": "object",
        "required": ["name"],
        "properties": {"name": {**_ref("name"), "description": "unique among the devices"}},
    }


def _host_thread_schema() -> dict[str, Any]:
    return {
        "title": "host thread",
        "description": "a host thread: it issues its own ops in program order and its "
        "synchronisations block only it",
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {**_ref("name"), "description": "unique, and no device's name"},
            "device": {
                **_ref("name"),
                "description": "its current device (default: the first device)",
            },
        },
    }


def _communicator_schema() -> dict[str, Any]:
    return {
        "title": "communicator",
        "description": "an NCCL communicator: the devices its collectives run across",
        "type": "object",
        "required": ["name", "devices"],
        "properties": {
            "name": {**_ref("name"), "description": "unique among the communicators"},
            "devices": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_DEVICES,
                "uniqueItems": True,
                "items": _ref("name"),
                "description": "declared devices, in rank order",
            },
        },
    }


def pipeline_defs() -> dict[str, Any]:
    """The ``$defs`` a pipeline schema refers to (``name``, ``stream``, ``device``,
    ``communicator``, ``op``, ``op_KIND``).

    A schema that embeds a pipeline (a run file's) holds the same ``$defs``, so that the
    ``#/$defs/...`` references resolve in both."""
    defs: dict[str, Any] = {
        "name": _NAME,
        "stream": _stream_schema(),
        "device": _device_schema(),
        "communicator": _communicator_schema(),
        "host_thread": _host_thread_schema(),
        "op": _op_schema(),
    }
    for kind in OP_KINDS:
        defs[f"op_{kind}"] = _op_kind_schema(kind)
    return defs


def pipeline_object() -> dict[str, Any]:
    """The pipeline object itself (without ``$schema``, ``$id`` or ``$defs``), for embedding."""
    return {
        "type": "object",
        "required": ["format", "version", "program"],
        "properties": {
            "$schema": {"type": "string", "description": "this schema, for editors"},
            "format": {"const": FORMAT_NAME},
            "version": {"const": FORMAT_VERSION},
            "name": {
                "type": "string",
                "maxLength": MAX_NAME_CHARS,
                "default": "untitled",
                "description": "the pipeline's title",
            },
            "description": {"type": "string", "maxLength": MAX_TEXT_CHARS},
            "lesson": {"type": "string", "maxLength": MAX_TEXT_CHARS},
            "device": {
                "type": "string",
                "maxLength": MAX_DEVICE_CHARS,
                "description": "the preferred device preset: a name or a preset file",
            },
            "streams": {
                "type": "array",
                "maxItems": MAX_STREAMS,
                "items": _ref("stream"),
                "default": [],
                "description": "declared streams; the legacy default stream is implicit",
            },
            "program": {
                "type": "array",
                "maxItems": MAX_OPS,
                "items": _ref("op"),
                "description": "the CUDA calls in the order the host thread issues them",
            },
            "devices": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_DEVICES,
                "items": _ref("device"),
                "description": f"the GPUs, each with its own host thread (default: one, "
                f"{DEFAULT_DEVICE!r})",
            },
            "communicators": {
                "type": "array",
                "maxItems": MAX_COMMUNICATORS,
                "items": _ref("communicator"),
                "description": "NCCL communicators, for collectives",
            },
            "host_threads": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_HOST_THREADS,
                "items": _ref("host_thread"),
                "description": "the program's host threads (default: one per device, named "
                "after it)",
            },
        },
        "$comment": "keys Swimlanes does not know are kept when the file is saved again",
    }


def pipeline_schema() -> dict[str, Any]:
    """The JSON Schema of a pipeline file (``swimlanes-pipeline`` version 1)."""
    return {
        "$schema": DIALECT,
        "$id": schema_id("pipeline", FORMAT_VERSION),
        "title": "Swimlanes pipeline",
        "description": "A host program of CUDA API calls on streams (docs/file-format.md).",
        **pipeline_object(),
        "$defs": pipeline_defs(),
    }


def schema_json(schema: dict[str, Any]) -> str:
    """A schema as the shipped files hold it: indented JSON ending in a newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
