"""Bars as pixels: culling, merging sub-pixel bars into shaded runs, label boxes (no Qt).

A paint maps the visible bars of one colour to pixel spans. Bars narrower than a pixel or two
are merged per row and pixel column into runs whose shade is the fraction of the column they
cover (a row busy 39 % of the time reads 39 % busy at overview, not solid). All vectorised:
a million bars cost a few numpy passes, and :class:`BarLod` precomputes coverage so zoomed-out
paints do not touch the bars at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Shades of a merged run: its alpha is shade / SHADE_LEVELS (few levels: one fill per level).
SHADE_LEVELS = 8
#: Coverage (in columns) given to a zero-length bar, so it still shows.
_MIN_COVER = 1e-3


def cull_bars(
    x0: np.ndarray,
    x1: np.ndarray,
    row: np.ndarray,
    op: np.ndarray,
    max_width: float,
    view: tuple[float, float],
    px_per_unit: float,
    px_offset: float,
    n_rows: int,
    merge_below_px: float = 2.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bars of one colour (``x0`` sorted) that touch ``view``, mapped to pixel x.

    Bars narrower than ``merge_below_px`` are painted into per-row pixel columns and merged
    into runs, so a million bars cost at most a few rectangles per row and pixel column.
    Returns (px0, px1, row, op) with op -1 for merged runs.
    """
    return cull_bars_shaded(
        x0, x1, row, op, max_width, view, px_per_unit, px_offset, n_rows, merge_below_px, levels=1
    )[:4]


@dataclass
class Coverage:
    """Merged sub-pixel bars of one colour: the fraction of each (row, pixel column) they
    cover, columns ``left``, ``left + 1``... in pixels."""

    left: float
    fraction: np.ndarray

    def runs(self, levels: int = SHADE_LEVELS) -> tuple[np.ndarray, ...]:
        """As runs of one shade: (px0, px1, row, shade); see :func:`shade_runs`."""
        px = np.arange(self.fraction.shape[1], dtype=np.float64) + self.left
        return shade_runs(self.fraction, px, levels)


def cull_bars_split(
    x0: np.ndarray,
    x1: np.ndarray,
    row: np.ndarray,
    op: np.ndarray,
    max_width: float,
    view: tuple[float, float],
    px_per_unit: float,
    px_offset: float,
    n_rows: int,
    merge_below_px: float = 2.0,
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], Coverage | None]:
    """Bars of one colour (``x0`` sorted) that touch ``view``: ((px0, px1, row, op) of the
    bars drawn as they are, the :class:`Coverage` of the merged narrow ones or None)."""
    lo = int(np.searchsorted(x0, view[0] - max_width, "left"))
    hi = int(np.searchsorted(x0, view[1], "right"))
    a, b, r, o = x0[lo:hi], x1[lo:hi], row[lo:hi], op[lo:hi]
    keep = b >= view[0]
    if not keep.all():
        a, b, r, o = a[keep], b[keep], r[keep], o[keep]
    p0 = a * px_per_unit + px_offset
    p1 = b * px_per_unit + px_offset
    narrow = (p1 - p0) < merge_below_px
    if narrow.sum() < 256:
        return (p0, p1, r, o), None
    left = float(np.floor(p0[narrow].min()))
    right = max(float(p1[narrow].max()), left + 1)
    width = int(np.ceil(right - left)) + 2
    if width > 1_000_000:  # not a sane screen; fall back to plain bars
        return (p0, p1, r, o), None
    u0 = p0[narrow] - left
    # a zero-length op still marks its pixel (faintly): it happened there
    u1 = np.maximum(p1[narrow] - left, u0 + _MIN_COVER)
    cov = coverage_grid(u0, u1, r[narrow], n_rows, width)
    wide = ~narrow
    return (p0[wide], p1[wide], r[wide], o[wide]), Coverage(left, np.minimum(cov, 1.0))


def cull_bars_shaded(
    x0: np.ndarray,
    x1: np.ndarray,
    row: np.ndarray,
    op: np.ndarray,
    max_width: float,
    view: tuple[float, float],
    px_per_unit: float,
    px_offset: float,
    n_rows: int,
    merge_below_px: float = 2.0,
    levels: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`cull_bars` plus each span's shade: (px0, px1, row, op, shade).

    A merged run's shade (1 to ``levels``, default :data:`SHADE_LEVELS`) is the fraction of
    its pixel columns the bars actually cover, so a row busy 39 % of the time reads 39 % busy
    when zoomed out instead of solid; exact bars get ``levels`` (opaque).
    """
    levels = levels or SHADE_LEVELS
    (p0, p1, r, o), cov = cull_bars_split(
        x0, x1, row, op, max_width, view, px_per_unit, px_offset, n_rows, merge_below_px
    )
    if cov is None:
        return p0, p1, r, o, np.full(len(p0), levels, np.int8)
    mp0, mp1, sr, shade = cov.runs(levels)
    return (
        np.concatenate([p0, mp0]),
        np.concatenate([p1, mp1]),
        np.concatenate([r, sr.astype(r.dtype)]),
        np.concatenate([o, np.full(len(sr), -1, o.dtype)]),
        np.concatenate([np.full(len(p0), levels, np.int8), shade]),
    )


def coverage_grid(
    u0: np.ndarray,
    u1: np.ndarray,
    row: np.ndarray,
    n_rows: int,
    n_cols: int,
    clip: bool = True,
) -> np.ndarray:
    """Covered length of each (row, column) cell by spans ``[u0, u1)`` in column units.

    Vectorised: a span adds the covered part of its first column, of its last column, and 1 to
    each whole column in between (a difference array, only for the few spans that cross two
    column edges), so a cell holds 0.39 where bars cover 39 % of it (overlapping spans add up;
    callers clip at 1). ``clip`` False: the caller guarantees 0 <= u0 <= u1 <= n_cols + 1 (a
    million-bar grid skips two passes).
    """
    if clip:
        u0 = np.clip(u0, 0.0, n_cols)
        u1 = np.clip(u1, 0.0, n_cols)
    f0 = u0.astype(np.int64)  # floor: both are >= 0
    f1 = u1.astype(np.int64)
    i0 = row.astype(np.int64)
    i0 *= n_cols + 1
    i1 = i0 + f1
    i0 += f0
    size = n_rows * (n_cols + 1)
    # most spans sit in one column: their whole length goes there; the others are fixed up
    first = u1 - u0
    cross = np.flatnonzero(i1 > i0)
    if len(cross):
        first[cross] = (f0[cross] + 1) - u0[cross]
    cov = np.bincount(i0, weights=first, minlength=size)
    if len(cross):
        cov += np.bincount(i1[cross], weights=u1[cross] - f1[cross], minlength=size)
        whole = cross[f1[cross] - f0[cross] >= 2]
        if len(whole):
            step = np.bincount(i0[whole] + 1, minlength=size)
            step -= np.bincount(i1[whole], minlength=size)
            cov += np.cumsum(step.reshape(n_rows, n_cols + 1), axis=1).ravel()
    return cov.reshape(n_rows, n_cols + 1)[:, :n_cols]


def shade_levels(fraction: np.ndarray, levels: int = SHADE_LEVELS) -> np.ndarray:
    """Quantised shade (0: nothing, 1 to ``levels``) of covered fractions; any coverage shows."""
    q = np.rint(np.minimum(fraction, 1.0) * levels)
    q = np.where(fraction > 1e-9, np.maximum(q, 1), 0)
    return q.astype(np.int8)


def shade_runs(
    fraction: np.ndarray, px: np.ndarray, levels: int = SHADE_LEVELS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs of equal shade in a (row, pixel column) coverage matrix: (px0, px1, row, shade).

    ``px[j]`` is the left pixel of column ``j`` (consecutive pixels); ``levels`` 1 gives plain
    covered runs.
    """
    n_rows, n_px = fraction.shape
    padded = np.zeros((n_rows, n_px + 2), np.int8)
    padded[:, 1:-1] = shade_levels(fraction, levels)
    flat = padded.ravel()
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1  # where a new value begins
    value = flat[change]
    run = value != 0  # zeros pad each row, so a run never crosses rows
    starts = change[run]
    ends = np.append(change, len(flat))[1:][run]
    row, col = np.divmod(starts, n_px + 2)
    end_col = ends - row * (n_px + 2)
    return px[col - 1], px[end_col - 2] + 1.0, row.astype(np.int32), value[run]


def label_spans(
    p0: np.ndarray,
    p1: np.ndarray,
    op: np.ndarray,
    view_px: tuple[float, float],
    min_px: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where bar labels go: (bar indexes, left px, right px) of the visible part of each bar.

    A bar that starts left of the view (or ends right of it) keeps its label inside the part
    on screen, as in a profiler; only exact bars (``op`` >= 0) whose visible part is at least
    ``min_px`` wide get one.
    """
    lx0 = np.maximum(p0, view_px[0])
    lx1 = np.minimum(p1, view_px[1])
    idx = np.flatnonzero((op >= 0) & (lx1 - lx0 >= min_px))
    return idx, lx0[idx], lx1[idx]


class BarLod:
    """Level-of-detail coverage of one colour's short bars, for zoomed-out paints.

    Each row's short bars are painted once into a fine grid of time columns holding the
    fraction of each column they cover; coarser levels average pairs of columns. A paint that
    shows two or more columns per pixel reads a level instead of the bars, so a full view of a
    million bars costs a few thousand cells, not a pass over every bar, and each pixel knows
    how busy it is (see :func:`shade_runs`). Bars at least ``LONG_COLS`` columns long stay
    exact (with labels).
    """

    COLS = 1 << 16
    LONG_COLS = 4
    MIN_BARS = 20_000

    def __init__(self, x0: np.ndarray, x1: np.ndarray, row: np.ndarray, n_rows: int) -> None:
        self.left = float(x0.min()) if len(x0) else 0.0
        right = float(x1.max()) if len(x1) else 1.0
        self.res = max((right - self.left) / self.COLS, 1e-9)
        short = (x1 - x0) < self.LONG_COLS * self.res
        self.long_idx = np.flatnonzero(~short)
        if len(self.long_idx):
            x0, x1, row = x0[short], x1[short], row[short]
        u0 = x0 - self.left
        u0 /= self.res
        u1 = x1 - self.left
        u1 /= self.res
        np.maximum(u1, u0 + _MIN_COVER, out=u1)
        # bars lie in [left, right]: already inside the grid (u1 may pass COLS by _MIN_COVER)
        cov = coverage_grid(u0, u1, row, n_rows, self.COLS, clip=False)
        # covered fraction in 1/255ths: a quarter of float32's memory for every paint to read
        level = np.rint(np.minimum(cov, 1.0) * 255.0).astype(np.uint8)
        self.levels = [level]
        while level.shape[1] > 512:
            pairs = level.reshape(n_rows, -1, 2).astype(np.uint16)
            level = ((pairs[:, :, 0] + pairs[:, :, 1] + 1) >> 1).astype(np.uint8)
            self.levels.append(level)

    def runs(
        self, view: tuple[float, float], px_per_unit: float, px_offset: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Pixel runs (px0, px1, row) of the short bars, or None when zoomed in too far."""
        out = self.shaded_runs(view, px_per_unit, px_offset, levels=1)
        return None if out is None else out[:3]

    def shaded_runs(
        self,
        view: tuple[float, float],
        px_per_unit: float,
        px_offset: float,
        levels: int = SHADE_LEVELS,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """Pixel runs (px0, px1, row, shade) of the short bars, each run of one shade (the
        fraction of its pixels covered, in 1 to ``levels``), or None when zoomed in too far."""
        cov = self.coverage(view, px_per_unit, px_offset)
        return None if cov is None else cov.runs(levels)

    def coverage(
        self, view: tuple[float, float], px_per_unit: float, px_offset: float
    ) -> Coverage | None:
        """The fraction of each (row, pixel column) of ``view`` the short bars cover, or None
        when zoomed in too far for this grid."""
        px_units = 1.0 / px_per_unit
        k = int(np.floor(np.log2(px_units / (2 * self.res)))) if px_units > 0 else -1
        if k < 0:
            return None
        k = min(k, len(self.levels) - 1)
        level, res = self.levels[k], self.res * (1 << k)
        lo = max(int((view[0] - self.left) / res) - 1, 0)
        hi = min(int((view[1] - self.left) / res) + 2, level.shape[1])
        if hi <= lo:
            return Coverage(0.0, np.zeros((level.shape[0], 0), np.float32))
        px = np.floor((self.left + np.arange(lo, hi) * res) * px_per_unit + px_offset)
        starts = np.flatnonzero(np.concatenate(([True], px[1:] != px[:-1])))
        counts = np.diff(np.append(starts, hi - lo))
        sums = np.add.reduceat(level[:, lo:hi], starts, axis=1, dtype=np.uint32)
        fraction = sums / (counts * 255.0).astype(np.float32)
        # at two or more columns per pixel, the pixels of px[starts] are consecutive
        return Coverage(float(px[0]), fraction)
