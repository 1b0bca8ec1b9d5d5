"""Incremental JSON for large traces: the ``traceEvents`` array is walked one event at a time
(each decoded by the standard library's decoder), so a trace of millions of events is never
held as one Python object tree, progress can be reported and a load cancelled, and every
malformed event is named by its position."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from swimlanes.timeline.io import Cancel, Progress, TraceCancelled, TraceError

_WS = re.compile(r"[ \t\n\r]*")
_SEP = re.compile(r"[ \t\n\r]*([,\]]?)[ \t\n\r]*")
_CANCEL_EVERY = 4096
_decoder = json.JSONDecoder()


def _skip(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def _decode(text: str, i: int, where: str) -> tuple[Any, int]:
    try:
        return _decoder.raw_decode(text, i)
    except RecursionError:
        raise TraceError(f"{where}: JSON nested too deeply") from None
    except json.JSONDecodeError as err:
        # An unterminated string runs to the end of the text: the file was cut off.
        if err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string"):
            raise TraceError(f"{where}: truncated JSON (the file ends inside it)") from None
        line = text.count("\n", 0, err.pos) + 1
        raise TraceError(f"{where}: invalid JSON: {err.msg} (line {line})") from None


def _walk_array(
    text: str,
    i: int,
    on_item: Callable[[int, Any], None],
    tick: Callable[[int], None],
    *,
    lenient_end: bool,
) -> int:
    """Call ``on_item(n, element)`` for each element of the JSON array at ``text[i]`` (a
    ``'['``) and ``tick(offset)`` every few thousand; returns the offset past its ``']'``."""
    i = _skip(text, i + 1)
    if text.startswith("]", i):
        return i + 1
    n = 0
    decode = _decoder.raw_decode
    sep = _SEP.match
    end = len(text)
    while True:
        try:
            obj, i = decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            _decode(text, i, f"traceEvents[{n}]")  # raises the named error
        on_item(n, obj)
        n += 1
        if n % _CANCEL_EVERY == 0:
            tick(i)
        m = sep(text, i)
        c, i = m.group(1), m.end()
        if c == ",":
            if lenient_end and i >= end:
                return i
        elif c == "]":
            return i
        elif i >= end and lenient_end:
            # The Chrome JSON Array Format lets a trace that was cut off omit the closing ']'.
            return i
        elif i >= end:
            raise TraceError(f"traceEvents: truncated JSON after {n} events")
        else:
            raise TraceError(
                f"traceEvents[{n - 1}]: expected ',' or ']' after it, found {text[i]!r}"
            )


def parse_events(
    text: str, on_event: Callable[[int, Any], None], progress: Progress, cancel: Cancel
) -> dict[str, Any]:
    """Parse the whole document, calling ``on_event(n, event)`` for each trace event (the
    elements of its ``traceEvents`` array, or of the top-level array); returns the other
    top-level keys (``traceEvents`` as True)."""
    total = max(len(text), 1)

    def tick(offset: int) -> None:
        if cancel and cancel():
            raise TraceCancelled()
        if progress:
            progress(0.3 + 0.6 * offset / total)

    tick(0)
    i = _skip(text, 0)
    head = text[i : i + 1]
    if head == "[":
        i = _walk_array(text, i, on_event, tick, lenient_end=True)
        return _expect_end(text, i, {})
    if head != "{":
        raise TraceError("not a trace: expected a JSON object or array")
    top: dict[str, Any] = {}
    i = _skip(text, i + 1)
    if text.startswith("}", i):
        return _expect_end(text, i + 1, top)
    while True:
        key, i = _decode(text, i, "top-level key")
        if not isinstance(key, str):
            raise TraceError("invalid JSON: object keys must be strings")
        i = _skip(text, i)
        if not text.startswith(":", i):
            raise TraceError(f"invalid JSON after key {key!r}: expected ':'")
        i = _skip(text, i + 1)
        if key == "traceEvents" and text.startswith("[", i):
            i = _walk_array(text, i, on_event, tick, lenient_end=False)
            top[key] = True
        else:
            top[key], i = _decode(text, i, repr(key))
        i = _skip(text, i)
        c = text[i : i + 1]
        if c == "}":
            return _expect_end(text, i + 1, top)
        if c != ",":
            raise TraceError("truncated JSON" if c == "" else f"invalid JSON: unexpected {c!r}")
        i = _skip(text, i + 1)


def _expect_end(text: str, i: int, top: dict[str, Any]) -> dict[str, Any]:
    if _skip(text, i) < len(text):
        raise TraceError("invalid JSON: extra data after the trace")
    return top
