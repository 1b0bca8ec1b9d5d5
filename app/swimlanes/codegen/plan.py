"""What both code generators share: the only ways document content reaches generated code, and
the buffer plan.

Text from the document (the pipeline's name, stream and event names, op labels) reaches the
generated code only through :func:`identifier` (a ``[A-Za-z0-9_]`` name) or through the one
string-literal escaper of each language, :func:`python_string_literal` and
:func:`cpp_string_literal`. Both escapers write pure printable ASCII, so no source encoding,
encoding declaration, trigraph or line splice can change what they mean. Document text never
goes into a comment or a docstring, and the first lines of each generated file are fixed text
(Python reads an encoding declaration from a comment in its first two lines). Numbers go through
:func:`checked_int` and :func:`float_literal`, which refuse values the generated code cannot
hold; a refusal is a :class:`CodegenError`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from swimlanes.model.document import DEFAULT_STREAM, OP_KINDS, STREAM_KINDS, Pipeline, Stream

_IDENT_BAD = re.compile(r"[^A-Za-z0-9]+")

#: The largest integer a generated program holds (a C++ ``long long``).
INT64_MAX = 2**63 - 1
#: The largest grid a kernel launch takes (``gridDim.x``).
MAX_GRID_BLOCKS = 2**31 - 1
#: The range of a C++ ``int`` (stream priorities).
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class CodegenError(ValueError):
    """The document holds something the generated code cannot express (a number too large)."""


def identifier(text: str, prefix: str) -> str:
    """A C and Python identifier derived from ``text``: ``prefix_`` then up to 40 of
    ``[A-Za-z0-9_]`` (never a keyword, never a reserved ``__`` name: always prefixed, runs of
    other characters become one ``_``)."""
    core = _IDENT_BAD.sub("_", text)[:40].strip("_") or "x"
    return f"{prefix}_{core}"


def python_string_literal(text: str) -> str:
    """``text`` as a Python string literal of printable ASCII, for any ``str`` (lone surrogates
    included): ``ast.literal_eval`` of the result is ``text``.

    Letters, digits, spaces and printable punctuation are kept; quotes and backslashes, and every
    other character, become ``\\xhh``, ``\\uhhhh`` or ``\\Uhhhhhhhh`` escapes. With no quote
    inside, the literal cannot end early, and with nothing but ASCII it reads the same in every
    encoding Python could be told to decode the file with.
    """
    out = ["'"]
    for ch in text:
        code = ord(ch)
        if 0x20 <= code < 0x7F and ch not in "'\"\\":
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append("'")
    return "".join(out)


def cpp_string_literal(text: str) -> str:
    """``text`` as a C++ narrow string literal of printable ASCII holding its UTF-8 bytes (lone
    surrogates as their surrogate-pass bytes).

    Letters, digits, spaces and printable punctuation are kept, except ``"``, ``\\`` and ``?``,
    which are escaped (``\\?`` for every ``?``, so no trigraph such as ``??/`` can form under
    ``-std=c++14``); every other byte is a three-digit octal escape ``\\ooo``, which, unlike
    ``\\x``, cannot run on into a following digit. No newline, so no line splice.
    """
    out = ['"']
    for byte in text.encode("utf-8", errors="surrogatepass"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def checked_int(value: object, what: str, low: int = 0, high: int = INT64_MAX) -> int:
    """``value`` as an int within ``[low, high]``, for writing into generated code."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise CodegenError(f"{what}: not an integer ({type(value).__name__})")
    if not low <= value <= high:
        bound = f"at most {high}" if value > high else f"at least {low}"
        shown = str(value) if value.bit_length() < 200 else f"a {value.bit_length()}-bit number"
        raise CodegenError(f"{what}: {shown} does not fit in the generated code ({bound})")
    return value


def rounded_int(value: float, what: str, low: int = 0, high: int = INT64_MAX) -> int:
    """``round(value)`` checked like :func:`checked_int` (non-finite values refused too)."""
    try:
        number = round(value)
    except (OverflowError, ValueError, TypeError):
        raise CodegenError(f"{what}: {value!r} is not a finite number") from None
    return checked_int(number, what, low, high)


def float_literal(value: float | int, what: str) -> str:
    """A finite number as a literal both languages read as a double (``5.0``, ``1e+16``)."""
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):
        raise CodegenError(f"{what}: too large for the generated code") from None
    if not math.isfinite(number):
        raise CodegenError(f"{what}: {number!r} is not a finite number")
    return repr(number)


@dataclass
class BufferPlan:
    """Host and device buffers, one per distinct (memory kind, size), shared by the ops."""

    device: dict[int, str] = field(default_factory=dict)
    pinned: dict[int, str] = field(default_factory=dict)
    pageable: dict[int, str] = field(default_factory=dict)

    def device_buffer(self, nbytes: int) -> str:
        return self.device.setdefault(nbytes, f"d_buf{len(self.device)}")

    def host_buffer(self, nbytes: int, memory: str) -> str:
        table = self.pinned if memory == "pinned" else self.pageable
        prefix = "h_pinned" if memory == "pinned" else "h_pageable"
        return table.setdefault(nbytes, f"{prefix}{len(table)}")


@dataclass
class CodePlan:
    """Identifiers for streams and events, and the buffers, for one pipeline."""

    pipeline: Pipeline
    stream_ids: dict[str, str] = field(default_factory=dict)
    event_ids: dict[str, str] = field(default_factory=dict)
    buffers: BufferPlan = field(default_factory=BufferPlan)
    # src buffer of each d2d copy (a second device buffer of the same size)
    d2d_sources: dict[int, str] = field(default_factory=dict)

    @property
    def streams(self) -> list[Stream]:
        return self.pipeline.all_streams

    def stream_id(self, name: str | None) -> str:
        return self.stream_ids[name or DEFAULT_STREAM]


def _unique(ids: dict[str, str], name: str, prefix: str) -> str:
    base = identifier(name, prefix)
    candidate, n = base, 1
    while candidate in ids.values():
        n += 1
        candidate = f"{base}_{n}"
    ids[name] = candidate
    return candidate


def op_bytes(pipeline: Pipeline, index: int) -> int:
    """Op ``index``'s byte count (1 when it has none), checked to fit the generated code."""
    return checked_int(pipeline.program[index].bytes or 1, f"program[{index}].bytes", low=1)


def label_changes(pipeline: Pipeline) -> list[str | None]:
    """For each op, the label to make current before its code, or None where the current one is
    already right: an op's own label, or "" for an unlabelled op after a labelled one. The
    generated programs keep the current label in a variable that their CUDA errors name."""
    out: list[str | None] = []
    current = ""
    for op in pipeline.program:
        label = op.label or ""
        out.append(None if label == current else label)
        current = label
    return out


def make_plan(pipeline: Pipeline) -> CodePlan:
    """Name every stream, event and buffer the generated program needs; check the numbers that
    the generators write (a :class:`CodegenError` names the first that does not fit)."""
    plan = CodePlan(pipeline)
    for s in pipeline.all_streams:
        if s.kind not in STREAM_KINDS:
            raise CodegenError(f"stream {s.name!r}: unknown kind {s.kind!r}")
        _unique(plan.stream_ids, s.name, "stream")
        checked_int(s.priority, f"stream {s.name!r} priority", INT32_MIN, INT32_MAX)
    for ev in pipeline.events():
        _unique(plan.event_ids, ev, "event")
    for i, op in enumerate(pipeline.program):
        if op.op not in OP_KINDS:
            raise CodegenError(f"program[{i}].op: unknown op {op.op!r}")
        n = op_bytes(pipeline, i)
        if op.op == "kernel":
            checked_int(op.blocks or 1, f"program[{i}].blocks", 1, MAX_GRID_BLOCKS)
            checked_int(op.threads or 1, f"program[{i}].threads", 1, 1024)
        if op.op in ("h2d", "d2h"):
            plan.buffers.device_buffer(n)
            plan.buffers.host_buffer(n, op.effective_host_memory)
        elif op.op in ("memset", "d2d") or (op.op == "kernel" and op.bytes):
            plan.buffers.device_buffer(n)
        if op.op == "d2d":
            plan.d2d_sources[i] = f"d_src{i}"
    return plan
