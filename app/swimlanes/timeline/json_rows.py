"""The per-op rows of the command line's JSON output (``simulate --json``, ``run --json``),
built from a :class:`~swimlanes.timeline.timeline.Timeline`'s columns a column at a time.

:func:`op_rows` gives the rows as dicts; :func:`op_rows_text` gives each row's JSON text
directly, exactly as ``json.JSONEncoder(separators=(", ", ": ")).encode(row)`` writes that
row (ASCII only, floats as ``repr``), without building the dicts: at 100,000 ops, building and
encoding the dicts took a quarter of ``simulate --json``. Numbers are written by orjson when it
is installed (its float text is Python's ``repr``, checked by the tests) and by ``repr``
otherwise; strings always by the json module's C escaper, so the bytes are the same either way.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING, Any

import numpy as np

from swimlanes.model.document import OP_KINDS
from swimlanes.timeline.columns import NO_TIME

orjson: Any
try:  # optional: only faster (see number_texts)
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None

if TYPE_CHECKING:
    from swimlanes.timeline.timeline import Timeline

#: The keys of a row, in order, before the optional ones.
_TIME_KEYS = ("issue_us", "issue_end_us", "start_us", "end_us")


def time_values(column: np.ndarray, t0: int) -> list[float | None]:
    """Per row, ``round((v - t0) / 1000.0, 3)`` (microseconds from ``t0``), None for NO_TIME:
    the same floats as that Python expression, for the whole column at once. The quotient of
    integer nanoseconds by 1000.0 is already its own 3-decimal rounding: below 2**43 us it lies
    within half an ulp (< 0.0005) of ns / 1000, which rounds to that 3-decimal number, whose
    nearest double is the quotient; above, doubles are more than 0.001 apart and round's
    decimal, within 0.0005, is nearest to the quotient again (tests compare with round)."""
    missing = column == NO_TIME
    values: list[float | None] = ((np.where(missing, 0, column) - t0) / 1000.0).tolist()
    for r in np.flatnonzero(missing).tolist():
        values[r] = None
    return values


def spread_values(column: np.ndarray) -> list[float | None]:
    """Per row, ``s / 1000.0`` (a measured spread in us), None for NO_TIME."""
    values: list[float | None] = (column / 1000.0).tolist()
    for r in np.flatnonzero(column == NO_TIME).tolist():
        values[r] = None
    return values


def number_texts(values: list[Any]) -> list[str]:
    """Each value as the json module writes it (``repr``; ``null`` for None): ints of at most
    64 bits, None, and floats that are 0 or of magnitude 1e-4 to 1e16, where orjson's text of
    a float is ``repr``'s (below 1e-4 orjson writes ``0.00001`` for ``1e-05``). Every float of
    a row is such a number: integer nanoseconds of int64 columns over 1000. orjson writes a
    whole column in one call."""
    if orjson is not None:
        return orjson.dumps(values)[1:-1].decode("ascii").split(",") if values else []
    return ["null" if v is None else repr(v) for v in values]


def _names(names: list[str], column: np.ndarray) -> list[str | None]:
    table: list[str | None] = [*names, None]  # index -1: the None at the end
    return list(map(table.__getitem__, column.tolist()))


def _name_texts(names: list[str] | tuple[str, ...], column: np.ndarray) -> list[str]:
    table = [encode_basestring_ascii(n) for n in names]
    table.append("null")
    return list(map(table.__getitem__, column.tolist()))


def op_rows(tl: Timeline) -> list[dict[str, Any]]:
    """Per-op rows in the CLI's JSON shape (microseconds, relative to ``tl.t0``)."""
    t0 = tl.t0
    times = [time_values(getattr(tl, c), t0) for c in ("issue_start", "issue_end", "start", "end")]
    cols = zip(
        tl.index.tolist(), _names(list(OP_KINDS), tl.kind), _names(tl.stream_names, tl.stream),
        tl.labels, _names(tl.engine_names, tl.engine), *times, strict=True,
    )  # fmt: skip
    rows: list[dict[str, Any]] = [
        {
            "index": index,
            "op": kind,
            "stream": stream,
            "label": label,
            "engine": engine,
            "issue_us": i0,
            "issue_end_us": i1,
            "start_us": s0,
            "end_us": s1,
        }  # fmt: skip
        for index, kind, stream, label, engine, i0, i1, s0, s1 in cols
    ]
    for row, nbytes in zip(rows, tl.bytes.tolist(), strict=True):
        if nbytes:
            row["bytes"] = nbytes
    for key, values in _optional_columns(tl):
        for row, value in zip(rows, values, strict=True):
            row[key] = value
    return rows


def _optional_columns(tl: Timeline) -> list[tuple[str, list[Any]]]:
    """The keys after ``bytes`` that some timelines' rows have, with their values."""
    out: list[tuple[str, list[Any]]] = []
    if tl.device_names:  # a multi-device timeline: the device that issued each op
        out.append(("device", _names(tl.device_names, tl.host_device)))
    if tl.thread_names:  # several host threads: the one that issued each op
        out.append(("thread", _names(tl.thread_names, tl.host_thread)))
    if tl.start_spread is not None and tl.end_spread is not None:
        out.append(("start_spread_us", spread_values(tl.start_spread)))
        out.append(("end_spread_us", spread_values(tl.end_spread)))
    return out


def op_rows_text(tl: Timeline, separator: str) -> str:
    """The rows of :func:`op_rows` as JSON text, each as ``json.JSONEncoder(separators=(", ",
    ": ")).encode(row)`` writes it, with ``separator`` between rows; built from the columns
    without the dicts (one join of every row's pieces)."""
    n = len(tl)
    if not n:
        return ""
    t0 = tl.t0
    cols: list[list[str]] = [
        number_texts(tl.index.tolist()),
        _name_texts(OP_KINDS, tl.kind),
        _name_texts(tl.stream_names, tl.stream),
        list(map(encode_basestring_ascii, tl.labels)),
        _name_texts(tl.engine_names, tl.engine),
    ]
    cols += [number_texts(time_values(getattr(tl, c), t0)) for c in
             ("issue_start", "issue_end", "start", "end")]  # fmt: skip
    cols.append(_tail_texts(tl))
    keys = ("index", "op", "stream", "label", "engine", *_TIME_KEYS)
    heads = ["{" + encode_basestring_ascii(keys[0]) + ": "]
    heads += [f", {encode_basestring_ascii(k)}: " for k in keys[1:]]
    heads.append("")  # (the optional keys: their texts hold their keys)
    # Row after row: each key's constant text, its value's text, ..., "}" and the separator.
    width = 2 * len(cols) + 1
    pieces: list[str] = [""] * (n * width)
    for k, (head, texts) in enumerate(zip(heads, cols, strict=True)):
        pieces[2 * k :: width] = [head] * n
        pieces[2 * k + 1 :: width] = texts
    pieces[width - 1 :: width] = ["}" + separator] * n
    pieces[-1] = "}"
    return "".join(pieces)


def _tail_texts(tl: Timeline) -> list[str]:
    """Per row, the text of its optional keys (``bytes`` when not 0, then the keys of
    :func:`_optional_columns`), each with its leading ``", "``."""
    tail = [', "bytes": ' + b if b != "0" else "" for b in number_texts(tl.bytes.tolist())]
    for key, values in _optional_columns(tl):
        texts = (
            [encode_basestring_ascii(v) if v is not None else "null" for v in values]
            if key in ("device", "thread")
            else number_texts(values)
        )
        prefix = f", {encode_basestring_ascii(key)}: "
        tail = [a + prefix + b for a, b in zip(tail, texts, strict=True)]
    return tail
