"""Streaming JSON for large traces, in memory bounded by what is kept rather than by file size.

The text arrives in chunks (see :func:`swimlanes.timeline.formats.trace_source.text_chunks`)
and only a window of it is held: the ``traceEvents`` array is walked one event at a time (each
decoded by the standard library's decoder), values the importer does not use are skipped
without being held, and no single value decoded whole may span more than
:data:`MAX_VALUE_CHARS`. Every malformed value is named by its place in the document
(``traceEvents[12]``, ``timeline.columns.end``).
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from swimlanes.timeline.formats.run_format import RUN_FORMAT
from swimlanes.timeline.formats.trace_source import TraceError
from swimlanes.timeline.timeline import TIMELINE_FORMAT

#: The most text one JSON value decoded whole may span (one trace event, or one top-level
#: value such as ``deviceProperties``); a longer one is refused before it fills memory.
MAX_VALUE_CHARS = 16 * 1024 * 1024

# _WS, _SEP and _NUMBERS match at every position (each part is optional), so their
# match() is never None, which mypy cannot know (hence the ignores after their uses).
_WS = re.compile(r"[ \t\n\r]*")
_SEP = re.compile(r"[ \t\n\r]*([,\]]?)[ \t\n\r]*")
# The characters of a list of JSON numbers (anything else ends the run).
_NUMBERS = re.compile(r"[-+0-9.eE, \t\n\r]*")
_decoder = json.JSONDecoder()
_OPENS = (ord("["), ord("{"))
_CLOSES = (ord("]"), ord("}"))

# Top-level keys of a trace that import reads; the others are skipped unread.
_TRACE_KEYS = frozenset({"format", "version", "deviceProperties", "otherData", "swimlanesCapture"})
# Keys of a swimlanes-timeline object; a run holds one under "timeline".
_TIMELINE_KEYS = frozenset(
    {"format", "version", "name", "source", "device", "meta", "stream_names", "engine_names",
     "labels", "columns", "deps", "occupancy"}
)  # fmt: skip
_RUN_KEYS = frozenset({"format", "version", "timeline", "pipeline"})
# Members of a timeline holding a value per op or per dependency: (lists of integers, kept as
# compact arrays (None: all); other lists, read an element at a time).
_LONG_LISTS: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...]]] = {
    "columns": (None, ()),
    "deps": (("src", "dst"), ("kind",)),
    "occupancy": (("time", "sms"), ()),
}


class JsonStream:
    """A window on JSON text read from ``chunks``; ``pos`` is the next unread character."""

    def __init__(self, chunks: Iterator[str], max_value_chars: int = MAX_VALUE_CHARS) -> None:
        self._chunks = chunks
        self.max_value_chars = max_value_chars
        self.buf = ""
        self.pos = 0
        self.eof = False
        self._lines = 0  # newlines in the text before buf

    # -- reading on -------------------------------------------------------------------------
    def _more(self, want: int) -> bool:
        """Drop what has been read and read on until ``want`` characters are unread (or the
        text ends); False if nothing more came."""
        self._lines += self.buf.count("\n", 0, self.pos)
        parts = [self.buf[self.pos :]]
        have, got = len(parts[0]), False
        while have < want:
            chunk = next(self._chunks, None)
            if chunk is None:
                self.eof = True
                break
            parts.append(chunk)
            have += len(chunk)
            got = True
        self.buf, self.pos = "".join(parts), 0
        return got

    def _grow(self, where: str) -> None:
        """Read on for a value that does not fit yet: twice what is held, so that decoding a
        long value is retried a logarithmic number of times."""
        have = len(self.buf) - self.pos
        if have > self.max_value_chars:
            raise self._too_long(where)
        self._more(min(max(2 * have, have + 1), self.max_value_chars + 1))

    def _too_long(self, where: str) -> TraceError:
        return TraceError(
            f"{where}: one JSON value over the {self.max_value_chars:,}-character limit"
        )

    def peek(self) -> str:
        """The next character after whitespace ('' at the end of the text)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if self.eof or not self._more(1):
                return ""

    # -- values -----------------------------------------------------------------------------
    def value(self, where: str) -> Any:
        """Decode the next value whole (it may span at most ``max_value_chars``)."""
        self.peek()
        while True:
            try:
                obj, end = _decoder.raw_decode(self.buf, self.pos)
            except RecursionError:
                raise TraceError(f"{where}: JSON nested too deeply") from None
            except json.JSONDecodeError as err:
                if self.eof or not self._cut_by_buffer(err):
                    raise self._invalid(err, where) from None
            except ValueError:  # int() refuses numbers of more than 4,300 digits
                raise TraceError(f"{where}: a number far too long for a time or a count") from None
            else:
                # A number or literal that ends the buffer may go on in the next chunk.
                if end - self.pos > self.max_value_chars:
                    raise self._too_long(where)
                if end < len(self.buf) or self.eof or type(obj) in (dict, list, str):
                    self.pos = end
                    return obj
            self._grow(where)

    def _cut_by_buffer(self, err: json.JSONDecodeError) -> bool:
        """Whether a decode error may only mean that the value goes on past the buffer."""
        return err.pos >= len(self.buf) - 8 or err.msg.startswith("Unterminated string")

    def _invalid(self, err: json.JSONDecodeError, where: str) -> TraceError:
        if err.pos >= len(self.buf.rstrip()) or err.msg.startswith("Unterminated string"):
            return TraceError(f"{where}: truncated JSON (the file ends inside it)")
        line = self._lines + self.buf.count("\n", 0, err.pos) + 1
        return TraceError(f"{where}: invalid JSON: {err.msg} (line {line})")

    def skip_value(self, where: str) -> None:
        """Read past the next value without holding it (its inside is not checked)."""
        c = self.peek()
        if c not in ('"', "[", "{"):
            self.value(where)
            return
        depth = 0
        while True:
            quote = self.buf.find('"', self.pos)
            stop = quote if quote >= 0 else len(self.buf)
            at, depth = _closed_at(self.buf[self.pos : stop], depth)
            if at >= 0:
                self.pos += at
                return
            self.pos = stop
            if quote >= 0:
                self.pos += 1
                self._skip_string(where)
                if depth == 0:
                    return
            elif self.eof or not self._more(1):
                raise TraceError(f"{where}: truncated JSON (the file ends inside it)")

    def _skip_string(self, where: str) -> None:
        """Read past the rest of a string (``pos`` is just inside its opening quote)."""
        while True:
            quote = self.buf.find('"', self.pos)
            escape = self.buf.find("\\", self.pos, len(self.buf) if quote < 0 else quote)
            if escape >= 0 and escape + 1 < len(self.buf):
                self.pos = escape + 2
                continue
            if escape < 0 and quote >= 0:
                self.pos = quote + 1
                return
            # The buffer ends inside the string (maybe just after a backslash): read on.
            self.pos = escape if escape >= 0 else len(self.buf)
            if self.eof or not self._more(len(self.buf) - self.pos + 1):
                raise TraceError(f"{where}: truncated JSON (the file ends inside a string)")

    def expect_end(self) -> None:
        if self.peek():
            raise TraceError("invalid JSON: extra data after the trace")

    # -- containers -------------------------------------------------------------------------
    def each(
        self, where: str, on_item: Callable[[int, Any], None], *, lenient_end: bool = False
    ) -> None:
        """Call ``on_item(n, element)`` for each element of the array at the next ``[``.
        ``lenient_end``: the text may end before ``]`` (the Chrome JSON Array Format lets a
        trace that was cut off omit it)."""
        self.pos += 1
        if self.peek() == "]":
            self.pos += 1
            return
        n = 0
        while True:
            n = self._each_in_buffer(where, on_item, n)
            if n < 0:
                return
            # The next element may go on past the buffer: value() reads on as it needs.
            on_item(n, self.value(f"{where}[{n}]"))
            n += 1
            c = self.peek()
            if c == "," or c == "]":
                self.pos += 1
                if c == "]" or (lenient_end and not self.peek()):
                    return
            elif not c and lenient_end:
                return
            elif not c:
                raise TraceError(f"{where}: truncated JSON after {n} elements")
            else:
                raise TraceError(f"{where}[{n - 1}]: expected ',' or ']' after it, found {c!r}")

    def _each_in_buffer(self, where: str, on_item: Callable[[int, Any], None], n: int) -> int:
        """The fast path of :meth:`each`: elements that lie wholly in the buffer, each with its
        separator. Returns the next element's number, or -1 past the closing ``]``."""
        buf, end = self.buf, len(self.buf)
        i = _WS.match(buf, self.pos).end()  # type: ignore[union-attr]
        # scan_once is set on every JSONDecoder in its __init__; typeshed leaves it out.
        scan, sep = _decoder.scan_once, _SEP.match  # type: ignore[attr-defined]
        while True:
            try:
                obj, j = scan(buf, i)
            except (StopIteration, ValueError, RecursionError):
                break  # value() reads on, or names the error
            m = sep(buf, j)
            if m.end() >= end:  # type: ignore[union-attr]
                break
            on_item(n, obj)
            n += 1
            c, i = m.group(1), m.end()  # type: ignore[union-attr]
            if c == "]":
                self.pos = i
                return -1
            if c != ",":
                raise TraceError(
                    f"{where}[{n - 1}]: expected ',' or ']' after it, found {buf[i]!r}"
                )
        self.pos = i
        return n

    def members(self, where: str) -> Iterator[str]:
        """Walk the object at the next ``{``: yields each key with the stream at its value,
        and the caller reads the value."""
        self.pos += 1
        c = self.peek()
        if c == "}":
            self.pos += 1
            return
        while True:
            if c != '"':
                raise TraceError(
                    f"{where}: truncated JSON"
                    if not c
                    else f"{where}: invalid JSON: expected a key"
                )
            key = self.value(f"{where}: a key")
            if self.peek() != ":":
                raise TraceError(f"{where}: invalid JSON after key {key!r}: expected ':'")
            self.pos += 1
            yield key
            c = self.peek()
            if c == "}":
                self.pos += 1
                return
            if c != ",":
                raise TraceError(
                    f"{where}: truncated JSON" if not c else f"{where}: invalid JSON after {key!r}"
                )
            self.pos += 1
            c = self.peek()

    def integers(self, where: str, limit: int) -> array:
        """The list of integers at the next ``[`` as an int64 array, decoded a buffer at a
        time; at most ``limit`` of them."""
        out = array("q")
        self.pos += 1
        after_comma = False
        while True:
            end = _NUMBERS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            closed = end < len(self.buf)
            comma = end if closed else self.buf.rfind(",", self.pos, end)
            text = self.buf[self.pos : max(comma, self.pos)]
            if closed and self.buf[end] != "]":
                raise TraceError(f"{where}[{len(out) + text.count(',')}]: must be an integer")
            if text.strip():
                _add_integers(out, text, where)
            elif comma >= self.pos and (after_comma or not closed):
                raise TraceError(f"{where}[{len(out)}]: invalid JSON: a value is missing")
            if len(out) > limit:
                raise TraceError(f"{where}: more than {limit:,} values (the limit)")
            if closed:
                self.pos = end + 1
                return out
            if comma >= self.pos:
                self.pos, after_comma = comma + 1, True
            if len(self.buf) - self.pos > self.max_value_chars:
                raise TraceError(f"{where}[{len(out)}]: a number far too long")
            if self.eof or not self._more(len(self.buf) - self.pos + 1):
                raise TraceError(f"{where}: truncated JSON")


def _add_integers(out: array, text: str, where: str) -> None:
    """Append the comma-separated integers of ``text``, naming the first bad one."""
    try:
        values = json.loads(f"[{text}]")
        bad = next((i for i, v in enumerate(values) if type(v) is not int), None)
    except ValueError:  # JSONDecodeError, or an integer of more than 4,300 digits
        values, bad = [], next(i for i, v in enumerate(text.split(",")) if not _is_integer(v))
    first = len(out)
    if bad is None:
        try:
            out.extend(values)
            return
        except OverflowError:
            bad = next(i for i, v in enumerate(values) if not -(2**63) <= v < 2**63)
    raise TraceError(f"{where}[{first + bad}]: must be an integer in the 64-bit range")


def _is_integer(text: str) -> bool:
    try:
        return type(json.loads(text)) is int
    except ValueError:
        return False


def _closed_at(text: str, depth: int) -> tuple[int, int]:
    """Walk brackets in ``text`` (which holds no string) from nesting ``depth``: the index
    past the bracket that closes the outermost one and 0, or -1 and the depth after it."""
    opens = text.count("[") + text.count("{")
    closes = text.count("]") + text.count("}")
    if closes < depth or not text:
        return -1, depth + opens - closes
    if len(text) < 256:
        for i, c in enumerate(text):
            depth += (c in "[{") - (c in "]}")
            if depth <= 0:
                return i + 1, 0
        return -1, depth
    # A long run of brackets (deep nesting): add them up without a Python loop.
    wide = not text.isascii()
    codes = np.frombuffer(
        text.encode("utf-32-le" if wide else "ascii"), np.uint32 if wide else np.uint8
    )
    level = depth + np.cumsum(np.isin(codes, _OPENS).astype(np.int64) - np.isin(codes, _CLOSES))
    hit = np.flatnonzero(level <= 0)
    return (int(hit[0]) + 1, 0) if len(hit) else (-1, int(level[-1]))


# -- documents ----------------------------------------------------------------------------------
def parse_document(
    stream: JsonStream, on_event: Callable[[int, Any], None], *, max_rows: int
) -> dict[str, Any]:
    """Walk a trace, a ``swimlanes-timeline`` or a ``swimlanes-run``: ``on_event(n, event)``
    for each trace event (the elements of ``traceEvents``, or of a top-level array); returns
    the top-level keys import reads (``traceEvents`` as whether it is a list; a timeline's long
    lists as int64 arrays of at most ``max_rows``)."""
    c = stream.peek()
    if c == "[":
        _walk_events(stream, on_event, lenient_end=True)
        stream.expect_end()
        return {"traceEvents": True}
    if c != "{":
        raise TraceError("not a trace: expected a JSON object or array")
    top: dict[str, Any] = {}
    for key in stream.members("top level"):
        fmt = top.get("format")
        if key == "traceEvents":
            top[key] = stream.peek() == "["  # anything else is refused, unread
            if top[key]:
                _walk_events(stream, on_event, lenient_end=False)
            else:
                stream.skip_value(repr(key))
        elif fmt == TIMELINE_FORMAT and key in _TIMELINE_KEYS:
            top[key] = _timeline_member(stream, key, key, max_rows)
        elif fmt == RUN_FORMAT and key == "timeline" and stream.peek() == "{":
            top[key] = _timeline(stream, "timeline", max_rows)
        elif key in _TRACE_KEYS or key in _TIMELINE_KEYS or key in _RUN_KEYS:
            top[key] = stream.value(repr(key))
        else:
            stream.skip_value(repr(key))
    stream.expect_end()
    return top


def _walk_events(
    stream: JsonStream, on_event: Callable[[int, Any], None], *, lenient_end: bool
) -> None:
    stream.each("traceEvents", on_event, lenient_end=lenient_end)


def _timeline(stream: JsonStream, where: str, max_rows: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in stream.members(where):
        out[key] = _timeline_member(stream, key, f"{where}.{key}", max_rows)
    return out


def _timeline_member(stream: JsonStream, key: str, where: str, max_rows: int) -> Any:
    """One member of a timeline object: its long lists of integers as int64 arrays, its labels
    an element at a time, the rest decoded whole."""
    if key == "labels" and stream.peek() == "[":
        return _values(stream, where, max_rows)
    if key not in _LONG_LISTS or stream.peek() != "{":
        return stream.value(where)
    ints, values = _LONG_LISTS[key]
    out: dict[str, Any] = {}
    for name in stream.members(where):
        inner = f"{where}.{name}"
        if stream.peek() != "[":
            out[name] = stream.value(inner)
        elif ints is None or name in ints:
            out[name] = stream.integers(inner, max_rows)
        elif name in values:
            out[name] = _values(stream, inner, max_rows)
        else:
            out[name] = stream.value(inner)
    return out


def _values(stream: JsonStream, where: str, limit: int) -> list[Any]:
    """The array at the next ``[``, decoded an element at a time (at most ``limit``)."""
    out: list[Any] = []

    def add(n: int, value: Any) -> None:
        if n >= limit:
            raise TraceError(f"{where}: more than {limit:,} values (the limit)")
        out.append(value)

    stream.each(where, add)
    return out
