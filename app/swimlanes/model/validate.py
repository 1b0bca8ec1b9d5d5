"""Validation of pipeline documents: every problem is reported with its JSON path."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from swimlanes.model.document import (
    COPY_OPS,
    DEFAULT_STREAM,
    EVENT_OPS,
    FORMAT_NAME,
    FORMAT_VERSION,
    HOST_COPY_OPS,
    HOST_MEMORY_KINDS,
    OP_KINDS,
    STREAM_KINDS,
    STREAM_OPS,
    Op,
    Pipeline,
    Stream,
)

MAX_THREADS_PER_BLOCK = 1024
_OP_KEYS = {
    "op",
    "stream",
    "label",
    "bytes",
    "host_memory",
    "async",
    "duration_us",
    "blocks",
    "threads",
    "block_us",
    "flops",
    "event",
}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a document, at a JSON path such as ``program[3].bytes``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class PipelineError(ValueError):
    """A document that cannot be loaded; ``problems`` lists every reason."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (isinstance(v, int | float) and not isinstance(v, bool)) and math.isfinite(v)


class _Checker:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def positive_int(self, obj: dict, key: str, path: str, required: bool) -> int | None:
        if key not in obj:
            if required:
                self.add(f"{path}.{key}", "is required (a positive integer)")
            return None
        v = obj[key]
        if not _is_int(v) or v <= 0:
            self.add(f"{path}.{key}", "must be a positive integer")
            return None
        return v

    def number(self, obj: dict, key: str, path: str, *, positive: bool) -> float | None:
        if key not in obj:
            return None
        v = obj[key]
        if not _is_number(v) or (v <= 0 if positive else v < 0):
            kind = "a positive number" if positive else "a number >= 0"
            self.add(f"{path}.{key}", f"must be {kind}")
            return None
        return v

    def string(self, obj: dict, key: str, path: str, required: bool) -> str | None:
        if key not in obj:
            if required:
                self.add(f"{path}.{key}", "is required (a non-empty string)")
            return None
        v = obj[key]
        if not isinstance(v, str) or not v.strip():
            self.add(f"{path}.{key}", "must be a non-empty string")
            return None
        return v


def _parse_stream(c: _Checker, raw: Any, path: str) -> Stream | None:
    if not isinstance(raw, dict):
        c.add(path, "must be an object")
        return None
    name = c.string(raw, "name", path, required=True)
    kind = raw.get("kind", "blocking")
    if kind not in STREAM_KINDS:
        c.add(f"{path}.kind", f"must be one of {', '.join(STREAM_KINDS)} (got {kind!r})")
        kind = None
    priority = raw.get("priority", 0)
    if not _is_int(priority):
        c.add(f"{path}.priority", "must be an integer (lower is higher priority)")
        priority = None
    if name == DEFAULT_STREAM and kind not in (None, "legacy_default"):
        c.add(f"{path}.name", "'default' is the legacy default stream's name")
    if kind == "legacy_default" and name not in (None, DEFAULT_STREAM):
        c.add(f"{path}.kind", "the legacy default stream must be named 'default'")
    if name is None or kind is None or priority is None:
        return None
    extra = {k: v for k, v in raw.items() if k not in ("name", "kind", "priority")}
    return Stream(name=name, kind=kind, priority=priority, extra=extra)


def _parse_kernel(c: _Checker, raw: dict, path: str, op: Op) -> None:
    op.blocks = c.positive_int(raw, "blocks", path, required=True)
    op.threads = c.positive_int(raw, "threads", path, required=True)
    if op.threads is not None and op.threads > MAX_THREADS_PER_BLOCK:
        c.add(f"{path}.threads", f"must be at most {MAX_THREADS_PER_BLOCK}")
    op.block_us = c.number(raw, "block_us", path, positive=True)
    op.flops = c.number(raw, "flops", path, positive=True)
    timing = [k for k in ("block_us", "duration_us") if k in raw]
    roofline = [k for k in ("flops", "bytes") if k in raw]
    if len(timing) + (1 if roofline else 0) != 1:
        c.add(path, "a kernel needs exactly one of block_us, duration_us, or flops/bytes")


def _parse_op(c: _Checker, raw: Any, path: str, stream_names: set[str]) -> Op | None:
    if not isinstance(raw, dict):
        c.add(path, "must be an object")
        return None
    kind = raw.get("op")
    if kind not in OP_KINDS:
        c.add(f"{path}.op", f"must be one of {', '.join(OP_KINDS)} (got {kind!r})")
        return None
    before = len(c.problems)
    op = Op(op=kind, extra={k: v for k, v in raw.items() if k not in _OP_KEYS})
    if "label" in raw:
        if isinstance(raw["label"], str):
            op.label = raw["label"]
        else:
            c.add(f"{path}.label", "must be a string")
    if "stream" in raw:
        op.stream = c.string(raw, "stream", path, required=False)
        if op.stream is not None and op.stream not in stream_names:
            c.add(f"{path}.stream", f"names no declared stream ({op.stream!r})")
        if kind not in STREAM_OPS and kind != "memset":
            c.add(f"{path}.stream", f"a {kind} op takes no stream")
    needs_bytes = kind in COPY_OPS or kind == "memset"
    op.bytes = c.positive_int(raw, "bytes", path, required=needs_bytes)
    if "host_memory" in raw:
        if kind not in HOST_COPY_OPS:
            c.add(f"{path}.host_memory", "only h2d and d2h copies touch host memory")
        elif raw["host_memory"] not in HOST_MEMORY_KINDS:
            c.add(f"{path}.host_memory", "must be 'pinned' or 'pageable'")
        else:
            op.host_memory = raw["host_memory"]
    if "async" in raw:
        if not isinstance(raw["async"], bool):
            c.add(f"{path}.async", "must be true or false")
        elif not needs_bytes:
            c.add(f"{path}.async", "only copies and memsets can be synchronous or asynchronous")
        else:
            op.is_async = raw["async"]
    op.duration_us = c.number(raw, "duration_us", path, positive=kind != "host")
    if kind == "kernel":
        _parse_kernel(c, raw, path, op)
    elif kind == "host" and op.duration_us is None and "duration_us" not in raw:
        c.add(f"{path}.duration_us", "is required for host work (a number >= 0)")
    if kind in EVENT_OPS:
        op.event = c.string(raw, "event", path, required=True)
    elif "event" in raw:
        c.add(f"{path}.event", f"a {kind} op takes no event")
    for key in ("blocks", "threads", "block_us", "flops"):
        if key in raw and kind != "kernel":
            c.add(f"{path}.{key}", "only kernels take this")
    return op if len(c.problems) == before else None


def pipeline_from_dict(data: Any) -> Pipeline:
    """Build a :class:`Pipeline` from parsed JSON, or raise :class:`PipelineError`."""
    c = _Checker()
    if not isinstance(data, dict):
        raise PipelineError([Problem("", "a pipeline file must hold a JSON object")])
    if data.get("format") != FORMAT_NAME:
        c.add("format", f"must be {FORMAT_NAME!r} (got {data.get('format')!r})")
    version = data.get("version")
    if version != FORMAT_VERSION:
        raise PipelineError(
            c.problems
            + [
                Problem(
                    "version",
                    f"unsupported version {version!r}: this Swimlanes reads version "
                    f"{FORMAT_VERSION}",
                )
            ]
        )
    name = data.get("name", "untitled")
    if not isinstance(name, str):
        c.add("name", "must be a string")
    streams: list[Stream] = []
    raw_streams = data.get("streams", [])
    if not isinstance(raw_streams, list):
        c.add("streams", "must be a list")
        raw_streams = []
    for i, raw in enumerate(raw_streams):
        s = _parse_stream(c, raw, f"streams[{i}]")
        if s is None:
            continue
        if any(o.name == s.name for o in streams):
            c.add(f"streams[{i}].name", f"duplicate stream name {s.name!r}")
            continue
        streams.append(s)
    names = {s.name for s in streams} | {DEFAULT_STREAM}
    raw_program = data.get("program")
    if not isinstance(raw_program, list):
        c.add("program", "is required (a list of ops)")
        raw_program = []
    program = [_parse_op(c, raw, f"program[{i}]", names) for i, raw in enumerate(raw_program)]
    if c.problems:
        raise PipelineError(c.problems)
    known = {"format", "version", "name", "streams", "program"}
    extra = {k: v for k, v in data.items() if k not in known}
    return Pipeline(
        name=name,
        streams=streams,
        program=[op for op in program if op is not None],
        extra=extra,
    )


def validate(pipeline: Pipeline) -> list[Problem]:
    """Problems with an in-memory pipeline (after edits), by re-checking its JSON form."""
    try:
        pipeline_from_dict(pipeline.to_dict())
    except PipelineError as err:
        return err.problems
    return []
