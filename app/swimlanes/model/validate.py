"""Validation of pipeline documents: every problem is reported with its JSON path.

Besides the shape of each key, the validator enforces the limits in
:mod:`swimlanes.model.document` (``MAX_OPS``, ``MAX_DURATION_US``, ``MAX_BYTES`` ...): what the
simulator can represent. Each refusal names the limit. Every check is linear in the size of the
document (no pass over the streams per stream, no pass over the program per op).
"""

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
    MAX_BLOCKS,
    MAX_BLOCKS_PER_SM,
    MAX_BYTES,
    MAX_DEVICE_CHARS,
    MAX_DURATION_US,
    MAX_FLOPS,
    MAX_JSON_DEPTH,
    MAX_JSON_INT,
    MAX_NAME_CHARS,
    MAX_OPS,
    MAX_PRIORITY,
    MAX_STREAMS,
    MAX_TEXT_CHARS,
    MAX_THREADS_PER_BLOCK,
    MIN_JSON_INT,
    MIN_PRIORITY,
    OP_KINDS,
    STREAM_KINDS,
    STREAM_OPS,
    Op,
    Pipeline,
    Stream,
)

__all__ = [
    "MAX_THREADS_PER_BLOCK",
    "MAX_PROBLEMS",
    "HugeInt",
    "PipelineError",
    "Problem",
    "pipeline_from_dict",
    "validate",
]

#: Problems listed in one PipelineError; the rest are counted in a last line.
MAX_PROBLEMS = 100
_OP_KEYS = {
    "op",
    "call_us",
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
#: Documented top-level keys that are kept in ``Pipeline.extra``, with their longest text.
_TEXT_KEYS = {"description": MAX_TEXT_CHARS, "lesson": MAX_TEXT_CHARS, "device": MAX_DEVICE_CHARS}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a document, at a JSON path such as ``program[3].bytes``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class PipelineError(ValueError):
    """A document that cannot be loaded; ``problems`` lists every reason (at most
    MAX_PROBLEMS of them, then a line counting the others)."""

    def __init__(self, problems: list[Problem]):
        if len(problems) > MAX_PROBLEMS:
            more = len(problems) - MAX_PROBLEMS
            problems = [*problems[:MAX_PROBLEMS], Problem("", f"... and {more} more problems")]
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class HugeInt:
    """An integer literal that does not fit in 64 bits, as the JSON loader leaves it
    (``swimlanes.model.io`` never lets Python convert it): the validator refuses it where it
    stands, naming its path."""

    __slots__ = ("digits",)

    def __init__(self, literal: str) -> None:
        self.digits = len(literal.lstrip("-"))

    def __repr__(self) -> str:
        return f"<an integer of {self.digits} digits>"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    """A finite int or float (ints are never converted: a huge one must not overflow)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and math.isfinite(v)


def _short(v: Any, limit: int = 60) -> str:
    """``repr(v)`` cut to ``limit`` characters, for messages that quote a bad value (never
    converting a huge integer to text: Python refuses past 4300 digits)."""
    if isinstance(v, str) and len(v) > limit:
        return f"{v[:limit]!r}... ({len(v)} characters)"
    if isinstance(v, dict | list):
        return f"a JSON {'object' if isinstance(v, dict) else 'array'}"
    if _is_int(v) and v.bit_length() > 64:
        return f"<an integer of about {int(v.bit_length() * 0.30103) + 1} digits>"
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "..."


def _got(v: Any) -> str:
    """``got VALUE`` for a refusal: numbers readable, long values cut short."""
    if isinstance(v, float):
        return f"got {v:g}"
    return f"got {_short(v)}"


class _Checker:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def positive_int(
        self, obj: dict, key: str, path: str, required: bool, maximum: int, unit: str = ""
    ) -> int | None:
        if key not in obj:
            if required:
                self.add(f"{path}.{key}", "is required (a positive integer)")
            return None
        v = obj[key]
        if isinstance(v, HugeInt):
            self.add(f"{path}.{key}", f"must be at most {maximum}{unit} ({_got(v)})")
            return None
        if not _is_int(v) or v <= 0:
            self.add(f"{path}.{key}", "must be a positive integer")
            return None
        if v > maximum:
            self.add(f"{path}.{key}", f"must be at most {maximum}{unit} ({_got(v)})")
            return None
        return v

    def number(
        self, obj: dict, key: str, path: str, *, positive: bool, maximum: float, unit: str = ""
    ) -> float | None:
        if key not in obj:
            return None
        v = obj[key]
        if isinstance(v, HugeInt):
            self.add(f"{path}.{key}", f"must be at most {maximum:g}{unit} ({_got(v)})")
            return None
        if not _is_number(v) or (v <= 0 if positive else v < 0):
            kind = "a positive number" if positive else "a number >= 0"
            self.add(f"{path}.{key}", f"must be {kind}")
            return None
        if v > maximum:
            self.add(f"{path}.{key}", f"must be at most {maximum:g}{unit} ({_got(v)})")
            return None
        return v

    def string(
        self, obj: dict, key: str, path: str, required: bool, maximum: int = MAX_NAME_CHARS
    ) -> str | None:
        if key not in obj:
            if required:
                self.add(f"{path}.{key}", "is required (a non-empty string)")
            return None
        v = obj[key]
        if not isinstance(v, str) or not v.strip():
            self.add(f"{path}.{key}", "must be a non-empty string")
            return None
        if len(v) > maximum:
            self.add(f"{path}.{key}", f"must be at most {maximum} characters (got {len(v)})")
            return None
        return v

    def json_values(self, value: Any, path: str) -> None:
        """Check kept unknown values: no integer past 64 bits, no NaN or infinity (which JSON
        cannot hold: saving them would write a file that never loads), no nesting past
        MAX_JSON_DEPTH. Iterative, linear in the size of ``value``."""
        stack: list[tuple[Any, str, int]] = [(value, path, 1)]
        while stack:
            v, where, depth = stack.pop()
            if isinstance(v, bool) or v is None or isinstance(v, str):
                continue
            if isinstance(v, HugeInt) or (_is_int(v) and not MIN_JSON_INT <= v <= MAX_JSON_INT):
                self.add(where, f"integers must fit in 64 bits ({_got(v)})")
            elif isinstance(v, float):
                if not math.isfinite(v):
                    self.add(where, f"must be a finite number (got {v!r})")
            elif isinstance(v, dict | list | tuple):  # (a tuple is saved as an array)
                if depth > MAX_JSON_DEPTH:
                    self.add(where, f"nested deeper than {MAX_JSON_DEPTH} levels")
                    continue
                items = v.items() if isinstance(v, dict) else enumerate(v)
                for k, item in items:
                    if not isinstance(item, str):
                        sub = _key_path(where, k) if isinstance(v, dict) else f"{where}[{k}]"
                        stack.append((item, sub, depth + 1))
            elif not _is_int(v):
                self.add(where, f"is not a JSON value ({type(v).__name__})")


def _key_path(path: str, key: Any) -> str:
    key = str(key)
    if len(key) > 40:
        key = key[:40] + "..."
    return f"{path}.{key}" if path else key


def _parse_stream(c: _Checker, raw: Any, path: str) -> Stream | None:
    if not isinstance(raw, dict):
        c.add(path, "must be an object")
        return None
    before = len(c.problems)
    name = c.string(raw, "name", path, required=True)
    kind = raw.get("kind", "blocking")
    if not isinstance(kind, str) or kind not in STREAM_KINDS:
        c.add(f"{path}.kind", f"must be one of {', '.join(STREAM_KINDS)} (got {_short(kind)})")
        kind = None
    priority = raw.get("priority", 0)
    if isinstance(priority, HugeInt) or (
        _is_int(priority) and not MIN_PRIORITY <= priority <= MAX_PRIORITY
    ):
        c.add(
            f"{path}.priority",
            f"must be from {MIN_PRIORITY} to {MAX_PRIORITY} (a C int; {_got(priority)})",
        )
        priority = None
    elif not _is_int(priority):
        c.add(f"{path}.priority", "must be an integer (lower is higher priority)")
        priority = None
    if name == DEFAULT_STREAM and kind not in (None, "legacy_default"):
        c.add(f"{path}.name", "'default' is the legacy default stream's name")
    if kind == "legacy_default" and name not in (None, DEFAULT_STREAM):
        c.add(f"{path}.kind", "the legacy default stream must be named 'default'")
    extra = {k: v for k, v in raw.items() if k not in ("name", "kind", "priority")}
    if extra:
        c.json_values(extra, path)
    if name is None or kind is None or priority is None or len(c.problems) != before:
        return None
    return Stream(name=name, kind=kind, priority=priority, extra=extra)


def _parse_kernel(c: _Checker, raw: dict, path: str, op: Op) -> None:
    op.blocks = c.positive_int(raw, "blocks", path, required=True, maximum=MAX_BLOCKS)
    op.threads = c.positive_int(raw, "threads", path, required=True, maximum=MAX_THREADS_PER_BLOCK)
    op.block_us = c.number(
        raw, "block_us", path, positive=True, maximum=MAX_DURATION_US, unit=" us"
    )
    op.flops = c.number(raw, "flops", path, positive=True, maximum=MAX_FLOPS)
    if op.block_us is not None and op.blocks is not None:
        total = op.block_us * op.blocks
        if total > MAX_DURATION_US:
            c.add(
                f"{path}.block_us",
                f"{op.blocks} blocks of {op.block_us:g} us make {total:.4g} us of block time: "
                f"at most {MAX_DURATION_US:g} us in one kernel",
            )
    if "blocks_per_sm" in raw:
        c.positive_int(raw, "blocks_per_sm", path, required=False, maximum=MAX_BLOCKS_PER_SM)
    timing = [k for k in ("block_us", "duration_us") if k in raw]
    roofline = [k for k in ("flops", "bytes") if k in raw]
    if len(timing) + (1 if roofline else 0) != 1:
        c.add(path, "a kernel needs exactly one of block_us, duration_us, or flops/bytes")


#: Per op kind, the keys a plain op of that kind may have (see _plain_op).
_PLAIN_KEYS: dict[str, frozenset[str]] = {
    kind: frozenset(
        {"op", "label", "duration_us", "call_us"}
        | ({"stream"} if kind in STREAM_OPS or kind == "memset" else set())
        | ({"bytes", "async"} if kind in COPY_OPS or kind == "memset" else set())
        | ({"host_memory"} if kind in HOST_COPY_OPS else set())
        | ({"blocks", "threads", "block_us", "flops", "bytes"} if kind == "kernel" else set())
        | ({"event"} if kind in EVENT_OPS else set())
        | ({"bytes"} if kind == "malloc" else set())
    )
    for kind in OP_KINDS
}


def _plain_number(v: Any, positive: bool, maximum: float) -> bool:
    """``v`` is an int or finite float in range (what _Checker.number accepts, or less)."""
    t = type(v)
    if t is not int and (t is not float or not math.isfinite(v)):
        return False
    return (v > 0 if positive else v >= 0) and v <= maximum


def _plain_name(v: Any) -> bool:
    return type(v) is str and len(v) <= MAX_NAME_CHARS and bool(v.strip())


def _plain_op(raw: dict, stream_names: set[str]) -> Op | None:
    """The op of ``raw`` when it is plainly valid: only keys its kind takes, each of the
    plain type and in range, and the keys its kind requires. Anything else (None) takes the
    full path of _parse_op, which accepts at least what this accepts, and builds the same Op:
    this only saves the full path's per-key checks on the ops of big programs."""
    kind = raw.get("op")
    if type(kind) is not str:
        return None
    allowed = _PLAIN_KEYS.get(kind)
    if allowed is None or not raw.keys() <= allowed or None in raw.values():
        return None  # (null is no key's plain value)
    get = raw.get
    label, stream, nbytes = get("label"), get("stream"), get("bytes")
    if label is not None and (type(label) is not str or len(label) > MAX_NAME_CHARS):
        return None
    if stream is not None and (not _plain_name(stream) or stream not in stream_names):
        return None
    if nbytes is not None and not (type(nbytes) is int and 0 < nbytes <= MAX_BYTES):
        return None
    if nbytes is None and (kind in COPY_OPS or kind == "memset"):
        return None
    memory, is_async, duration = get("host_memory"), get("async"), get("duration_us")
    if memory is not None and memory not in HOST_MEMORY_KINDS:
        return None
    if is_async is not None and type(is_async) is not bool:
        return None
    if "duration_us" in raw and not _plain_number(duration, kind != "host", MAX_DURATION_US):
        return None
    if kind == "host" and duration is None:
        return None
    call = get("call_us")
    if call is not None and not _plain_number(call, False, MAX_DURATION_US):
        return None
    event = get("event")
    if kind in EVENT_OPS and not _plain_name(event):
        return None
    blocks = threads = block_us = flops = None
    if kind == "kernel":
        blocks, threads = get("blocks"), get("threads")
        block_us, flops = get("block_us"), get("flops")
        if not (type(blocks) is int and 0 < blocks <= MAX_BLOCKS):
            return None
        if not (type(threads) is int and 0 < threads <= MAX_THREADS_PER_BLOCK):
            return None
        if block_us is not None and not (
            _plain_number(block_us, True, MAX_DURATION_US) and block_us * blocks <= MAX_DURATION_US
        ):
            return None
        if flops is not None and not _plain_number(flops, True, MAX_FLOPS):
            return None
        forms = ("block_us" in raw) + ("duration_us" in raw) + ("flops" in raw or "bytes" in raw)
        if forms != 1:
            return None
    return Op(
        kind, stream, label, nbytes, memory, is_async, duration, blocks, threads, block_us,
        flops, event, call,
    )  # fmt: skip


def _parse_op(c: _Checker, raw: Any, path: str, stream_names: set[str]) -> Op | None:
    if type(raw) is dict:
        op = _plain_op(raw, stream_names)
        if op is not None:
            return op
    if not isinstance(raw, dict):
        c.add(path, "must be an object")
        return None
    kind = raw.get("op")
    if not isinstance(kind, str) or kind not in OP_KINDS:
        c.add(f"{path}.op", f"must be one of {', '.join(OP_KINDS)} (got {_short(kind)})")
        return None
    before = len(c.problems)
    op = Op(op=kind, extra={k: v for k, v in raw.items() if k not in _OP_KEYS})
    if "label" in raw:
        label = raw["label"]
        if not isinstance(label, str):
            c.add(f"{path}.label", "must be a string")
        elif len(label) > MAX_NAME_CHARS:
            c.add(
                f"{path}.label", f"must be at most {MAX_NAME_CHARS} characters (got {len(label)})"
            )
        else:
            op.label = label
    if "stream" in raw:
        op.stream = c.string(raw, "stream", path, required=False)
        if op.stream is not None and op.stream not in stream_names:
            c.add(f"{path}.stream", f"names no declared stream ({_short(op.stream)})")
        if kind not in STREAM_OPS and kind != "memset":
            c.add(f"{path}.stream", f"a {kind} op takes no stream")
    needs_bytes = kind in COPY_OPS or kind == "memset"
    op.bytes = c.positive_int(
        raw, "bytes", path, required=needs_bytes, maximum=MAX_BYTES, unit=" bytes, 1 TiB"
    )
    if "host_memory" in raw:
        memory = raw["host_memory"]
        if kind not in HOST_COPY_OPS:
            c.add(f"{path}.host_memory", "only h2d and d2h copies touch host memory")
        elif not isinstance(memory, str) or memory not in HOST_MEMORY_KINDS:
            c.add(f"{path}.host_memory", "must be 'pinned' or 'pageable'")
        else:
            op.host_memory = memory
    if "async" in raw:
        if not isinstance(raw["async"], bool):
            c.add(f"{path}.async", "must be true or false")
        elif not needs_bytes:
            c.add(f"{path}.async", "only copies and memsets can be synchronous or asynchronous")
        else:
            op.is_async = raw["async"]
    op.duration_us = c.number(
        raw, "duration_us", path, positive=kind != "host", maximum=MAX_DURATION_US, unit=" us"
    )
    op.call_us = c.number(raw, "call_us", path, positive=False, maximum=MAX_DURATION_US, unit=" us")
    if kind == "kernel":
        _parse_kernel(c, raw, path, op)
    elif kind == "host" and op.duration_us is None and "duration_us" not in raw:
        c.add(f"{path}.duration_us", "is required for host work (a number >= 0)")
    if kind in EVENT_OPS:
        op.event = c.string(raw, "event", path, required=True)
    elif "event" in raw:
        c.add(f"{path}.event", f"a {kind} op takes no event")
    for key in ("blocks", "threads", "block_us", "flops", "blocks_per_sm"):
        if key in raw and kind != "kernel":
            c.add(f"{path}.{key}", "only kernels take this")
    if op.extra:
        c.json_values({k: v for k, v in op.extra.items() if k != "blocks_per_sm"}, path)
    return op if len(c.problems) == before else None


def _parse_streams(c: _Checker, raw_streams: list) -> list[Stream]:
    streams: list[Stream] = []
    seen: set[str] = set()  # linear: one set lookup per stream
    for i, raw in enumerate(raw_streams):
        s = _parse_stream(c, raw, f"streams[{i}]")
        if s is None:
            continue
        if s.name in seen:
            c.add(f"streams[{i}].name", f"duplicate stream name {_short(s.name)}")
            continue
        seen.add(s.name)
        streams.append(s)
    return streams


def _top_level(c: _Checker, data: dict) -> tuple[Any, list, list]:
    """The name, streams and program of ``data``, with their problems reported."""
    name = data.get("name", "untitled")
    if not isinstance(name, str):
        c.add("name", "must be a string")
    elif len(name) > MAX_NAME_CHARS:
        c.add("name", f"must be at most {MAX_NAME_CHARS} characters (got {len(name)})")
    for key, longest in _TEXT_KEYS.items():
        if key not in data:
            continue
        v = data[key]
        if not isinstance(v, str):
            c.add(key, "must be a string")
        elif len(v) > longest:
            c.add(key, f"must be at most {longest} characters (got {len(v)})")
    raw_streams = data.get("streams", [])
    if not isinstance(raw_streams, list):
        c.add("streams", "must be a list")
        raw_streams = []
    raw_program = data.get("program")
    if not isinstance(raw_program, list):
        c.add("program", "is required (a list of ops)")
        raw_program = []
    return name, raw_streams, raw_program


def pipeline_from_dict(data: Any) -> Pipeline:
    """Build a :class:`Pipeline` from parsed JSON, or raise :class:`PipelineError`."""
    c = _Checker()
    if not isinstance(data, dict):
        raise PipelineError([Problem("", "a pipeline file must hold a JSON object")])
    if data.get("format") != FORMAT_NAME:
        c.add("format", f"must be {FORMAT_NAME!r} (got {_short(data.get('format'))})")
    version = data.get("version")
    if version != FORMAT_VERSION:
        raise PipelineError(
            c.problems
            + [
                Problem(
                    "version",
                    f"unsupported version {_short(version)}: this Swimlanes reads version "
                    f"{FORMAT_VERSION}",
                )
            ]
        )
    name, raw_streams, raw_program = _top_level(c, data)
    # Too many streams or ops: refused before any per-item work (and only that is reported:
    # the items' own problems would be drowned by it).
    if len(raw_streams) > MAX_STREAMS:
        c.add("streams", f"{len(raw_streams)} streams: at most {MAX_STREAMS}")
    if len(raw_program) > MAX_OPS:
        c.add("program", f"{len(raw_program)} ops: at most {MAX_OPS}")
    if len(raw_streams) > MAX_STREAMS or len(raw_program) > MAX_OPS:
        raise PipelineError(c.problems)
    streams = _parse_streams(c, raw_streams)
    names = {s.name for s in streams} | {DEFAULT_STREAM}
    program = [_parse_op(c, raw, f"program[{i}]", names) for i, raw in enumerate(raw_program)]
    known = {"format", "version", "name", "streams", "program"}
    extra = {k: v for k, v in data.items() if k not in known}
    unknown = {k: v for k, v in extra.items() if k not in _TEXT_KEYS}
    if unknown:
        c.json_values(unknown, "")
    if c.problems:
        raise PipelineError(c.problems)
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
