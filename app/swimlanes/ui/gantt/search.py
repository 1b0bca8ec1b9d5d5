"""Find ops in a timeline by label, kind and stream (Qt-free, vectorised over its columns).

A query is a text with optional field terms: ``kind:kernel stream:s1 gemm`` finds kernels on
stream ``s1`` whose label contains "gemm". The text (the words that are not field terms, joined
by single spaces) must occur in the op's label, what its bar shows (the label, or the kind's
title when the op has none), case-insensitively: "chunk 2" finds "K chunk 2", not "H2D chunk
0". ``kind:``/``stream:``/``engine:``/``device:`` terms match a name exactly when one matches exactly,
else every name containing the text; several terms on one field are alternatives. Quotes
keep a field's value with spaces: ``kind:"H2D copy"``.

Matching costs one pass over each *distinct* label (a few thousand at most) plus numpy lookups
over the op columns, so a keystroke stays fast at a million ops. The distinct labels of a
timeline are found once and cached.
"""

from __future__ import annotations

import shlex
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from swimlanes.model.document import OP_KINDS
from swimlanes.timeline.timeline import NO_TIME, Timeline

#: Above this, the distinct labels are searched in Python rather than as one numpy array.
_MAX_LABEL_ARRAY_BYTES = 256 << 20
#: Query prefixes that select a column instead of the label.
FIELDS = ("kind", "stream", "engine", "device")


@dataclass
class SearchQuery:
    """A parsed query: the label text's words and field terms (any per field)."""

    words: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)
    engines: list[str] = field(default_factory=list)
    #: Devices whose host threads issued the op (multi-device timelines).
    devices: list[str] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not (self.words or self.kinds or self.streams or self.engines or self.devices)

    @property
    def text(self) -> str:
        """What a label must contain (lower case)."""
        return " ".join(self.words)


def parse_query(text: str) -> SearchQuery:
    """Split ``text`` into label words and ``kind:``/``stream:``/``engine:`` terms (lower case).

    An unfinished quote while typing is read as if it were closed.
    """
    try:
        tokens = shlex.split(text)
    except ValueError:
        tokens = text.replace('"', " ").replace("'", " ").split()
    query = SearchQuery()
    for token in tokens:
        name, sep, value = token.partition(":")
        name = name.lower()
        if sep and name in FIELDS:
            if value:
                getattr(query, f"{name}s").append(value.lower())
        else:
            query.words.append(token.lower())
    return query


class _LabelIndex:
    """A timeline's distinct labels and each op's code into them (built once per timeline)."""

    def __init__(self, tl: Timeline) -> None:
        codes: dict[str, int] = {}
        # one pass at load, never per keystroke: labels are a Python list
        self.codes = np.fromiter(
            (codes.setdefault(s, len(codes)) for s in tl.labels), np.int64, len(tl.labels)
        )
        lower = [s.lower() for s in codes]
        longest = max(map(len, lower), default=0)
        # a fixed-width array lets numpy search every distinct label in C; a few very long
        # labels would make it huge, and then a Python pass over the distinct labels it is
        self.lower: np.ndarray | list[str] = (
            np.array(lower, dtype=f"<U{max(longest, 1)}")
            if len(lower) * longest * 4 <= _MAX_LABEL_ARRAY_BYTES
            else lower
        )
        self.empty_code = codes.get("")

    def containing(self, text: str) -> np.ndarray:
        """Mask over the distinct labels that contain ``text`` (lower case)."""
        if isinstance(self.lower, np.ndarray):
            return np.char.find(self.lower, text) >= 0
        return np.array([text in s for s in self.lower], bool)


#: Per-timeline indexes by id(); Timeline is an unhashable dataclass, so each entry keeps a
#: weak reference to check it is still that timeline (an id can be reused after it dies).
_CACHE: dict[tuple[str, int], tuple[weakref.ref, Any]] = {}
_CACHE_SIZE = 8


def _cached(kind: str, tl: Timeline, build: Callable[[Timeline], Any]) -> Any:
    key = (kind, id(tl))
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is tl:
        return hit[1]
    value = build(tl)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    # dropped with its timeline: an edit's new schedule must not keep the old one's arrays
    _CACHE[key] = (weakref.ref(tl, lambda _ref: _CACHE.pop(key, None)), value)
    return value


def prepare(tl: Timeline | None) -> None:
    """Index a timeline's labels and times now (about a second at a million ops), so that
    the first search typed into it answers as fast as the next ones."""
    if tl is not None and len(tl):
        _label_index(tl)
        _time_index(tl)


def _label_index(tl: Timeline) -> _LabelIndex:
    return _cached("labels", tl, _LabelIndex)


def _names_matching(names: list[str], terms: list[str]) -> np.ndarray:
    """Indexes of ``names`` chosen by ``terms``: exact (case-insensitive) if any is, else
    containing the term."""
    lower = [n.lower() for n in names]
    chosen: set[int] = set()
    for term in terms:
        exact = [i for i, n in enumerate(lower) if n == term]
        chosen.update(exact or (i for i, n in enumerate(lower) if term in n))
    return np.array(sorted(chosen), np.int64)


def _column_mask(column: np.ndarray, names: list[str], terms: list[str]) -> np.ndarray:
    """Ops whose ``column`` (an index into ``names``; -1: none) names a chosen entry."""
    lut = np.zeros(len(names) + 1, bool)  # the last slot is -1: no stream/engine
    lut[_names_matching(names, terms)] = True
    return lut[column.astype(np.int64)]


def match_ops(
    tl: Timeline | None, query: SearchQuery | str, kind_titles: Mapping[str, str] | None = None
) -> np.ndarray:
    """Boolean mask over the timeline's rows of the ops the query finds (all False when the
    query is empty). ``kind_titles`` maps kinds to the titles unlabelled bars show (and that
    ``kind:`` also accepts), e.g. "kernel" -> "Kernel"."""
    if tl is None or not len(tl):
        return np.zeros(0, bool)
    q = parse_query(query) if isinstance(query, str) else query
    n = len(tl)
    if q.is_empty:
        return np.zeros(n, bool)
    titles = [(kind_titles or {}).get(k, k) for k in OP_KINDS]
    mask = np.ones(n, bool)
    if q.kinds:
        by_name = _names_matching(list(OP_KINDS), q.kinds)
        by_title = _names_matching(titles, q.kinds)
        lut = np.zeros(len(OP_KINDS), bool)
        lut[np.union1d(by_name, by_title)] = True
        mask &= lut[tl.kind.astype(np.int64)]
    if q.streams:
        mask &= _column_mask(tl.stream, tl.stream_names, q.streams)
    if q.engines:
        mask &= _column_mask(tl.engine, tl.engine_names, q.engines)
    if q.devices:
        # an op belongs to the device whose host thread issued it (its stream's device);
        # a single-device timeline has no device to match
        if tl.device_names:
            mask &= _column_mask(tl.host_device, tl.device_names, q.devices)
        else:
            mask &= False
    if q.words:
        index = _label_index(tl)
        hit = index.containing(q.text)[index.codes]
        if index.empty_code is not None:
            # an unlabelled bar shows its kind's title: match that instead
            title_hit = np.array([q.text in t.lower() for t in titles], bool)
            unlabelled = index.codes == index.empty_code
            hit[unlabelled] = title_hit[tl.kind[unlabelled].astype(np.int64)]
        mask &= hit
    return mask


class _TimeIndex:
    """A timeline's op spans from its start and the ops in time order (built once)."""

    def __init__(self, tl: Timeline) -> None:
        on = tl.on_device
        start = np.where(on, tl.start, tl.issue_start)
        end = np.where(on, tl.end, tl.issue_end)
        known = (start != NO_TIME) & (end != NO_TIME)
        t0 = tl.t0
        self.start = np.where(known, start - t0, 0)
        self.end = np.maximum(np.where(known, end - t0, 0), self.start)
        self.order = np.lexsort((tl.index, self.start))


def _time_index(tl: Timeline) -> _TimeIndex:
    return _cached("times", tl, _TimeIndex)


def op_times_ns(tl: Timeline) -> tuple[np.ndarray, np.ndarray]:
    """Each op's span from the timeline's start: on the device where it ran there, else its
    host call (what stepping through matches and zooming to the selection show)."""
    index = _time_index(tl)
    return index.start, index.end


def ordered_matches(tl: Timeline, mask: np.ndarray) -> np.ndarray:
    """Rows of the matched ops in time order (by start, then program order)."""
    order = _time_index(tl).order
    return order[mask[order]]


def extent_ns(tl: Timeline, rows: np.ndarray) -> tuple[int, int] | None:
    """First start to last end of these ops (ns from the timeline's start), None if none."""
    rows = np.asarray(rows, np.int64)
    if not len(rows):
        return None
    start, end = op_times_ns(tl)
    return int(start[rows].min()), int(end[rows].max())


def framed_range(lo: int, hi: int, margin: float = 0.05, min_width: int = 1000) -> tuple[int, int]:
    """A view range that shows [lo, hi] with ``margin`` of its width each side (at least
    ``min_width`` ns wide, so an instant op still gets a readable range)."""
    width = max(hi - lo, min_width)
    centre = (lo + hi) / 2
    half = width * (0.5 + margin)
    return round(centre - half), round(centre + half)
