"""Gantt bars as one pyqtgraph GraphicsObject: culled, merged, one drawRects call per colour.

Per-bar QGraphicsItems or BarGraphItem brushes cost ~170 ms a paint at 1e5 bars. Here each
colour keeps sorted numpy arrays; a paint selects the visible ones with searchsorted, merges
sub-pixel bars into pixel runs and draws in device pixels (crisp edges, text at screen size).
The same :func:`draw_bars` routine paints exported images.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen, QPolygonF

from swimlanes.model.document import OP_KINDS

try:  # pyqtgraph's numpy-backed QRectF array (what its BarGraphItem draws with)
    from pyqtgraph.Qt.internals import PrimitiveArray as _RectArray
except ImportError:  # pragma: no cover - older pyqtgraph: build QRectF lists
    _RectArray = None
from swimlanes.timeline.timeline import Timeline
from swimlanes.ui.gantt.coverage import Coverage, cull_bars_split
from swimlanes.ui.gantt.row_groups import summary_row_mask
from swimlanes.ui.gantt.rows import (
    SHADE_LEVELS,
    BarLod,
    ChartRows,
    label_colour_codes,
    label_spans,
)
from swimlanes.ui.gantt.shading import draw_coverages, is_raster
from swimlanes.ui.style import CATEGORY_COLOUR, OP_CATEGORY, OP_TITLE, text_colour_on

#: Vertical extent of a bar inside its row (fractions of the row height).
BAR_TOP = 0.14
BAR_HEIGHT = 0.72
#: Flagged ops (measured far from the model) are outlined in this red.
FLAG_COLOUR = "#E8000B"
MIN_LABEL_PX = 28.0
#: Bars at least this wide get a darker 1 px edge, so back-to-back ops of one colour (four
#: H2D copies in a row on the H2D engine) read as separate bars, not one long one.
EDGE_MIN_PX = 4.0
MAX_LABELS = 2000


def _draw_rects(
    painter: QPainter, x: np.ndarray, y: np.ndarray, w: np.ndarray, h: np.ndarray
) -> None:
    """One drawRects call for all rectangles.

    PySide's drawRects copies a Python list of QRectF (~1 µs per rect to build); pyqtgraph's
    PrimitiveArray hands Qt a numpy-backed QRectF array instead, ten times faster.
    """
    if _RectArray is not None:
        arr = _RectArray(QRectF, 4)
        arr.resize(len(x))
        mem = arr.ndarray()
        mem[:, 0], mem[:, 1], mem[:, 2], mem[:, 3] = x, y, w, h
        painter.drawRects(*arr.drawargs())
    else:
        painter.drawRects(list(map(QRectF, x.tolist(), y.tolist(), w.tolist(), h.tolist())))


#: Kernel colours when kernels are coloured by name: greens, teals, olive and purples,
#: none of them a copy (sky blue, orange, yellow), memset (grey), host (blue), event (pink) or
#: sync (vermillion) colour, so a kernel still never reads as a copy.
KERNEL_PALETTE = (
    CATEGORY_COLOUR["Kernel"],
    "#117733",
    "#44AA99",
    "#999933",
    "#6A3D9A",
    "#B2DF8A",
    "#AF8DC3",
    "#01665E",
)
#: Whether the app colours kernels by name until the user says otherwise (View menu).
KERNELS_BY_NAME_DEFAULT = False
#: The legend's kernel entry when kernels are coloured by name.
KERNEL_BY_NAME = "Kernel (colour by name)"
_KERNEL = OP_KINDS.index("kernel")


def legend_entries(tl: Timeline | None, kernels_by_name: bool = False) -> list[tuple[str, str]]:
    """(category, colour) of each op category present, in the palette's order.

    With ``kernels_by_name`` the kernel entry says so and its colour lists the palette
    (comma-separated, for a striped swatch).
    """
    if tl is None or not len(tl):
        return []
    kinds = {OP_KINDS[k] for k in np.unique(tl.kind).tolist()}
    present = {OP_CATEGORY[k] for k in kinds}
    out = [(c, colour) for c, colour in CATEGORY_COLOUR.items() if c in present]
    if kernels_by_name:
        out = [
            (KERNEL_BY_NAME, ",".join(KERNEL_PALETTE)) if c == "Kernel" else (c, col)
            for c, col in out
        ]
    return out


@dataclass
class BarGroup:
    """Bars of one colour, sorted by start."""

    colour: QColor
    x0: np.ndarray
    x1: np.ndarray
    row: np.ndarray
    op: np.ndarray
    max_width: float
    lod: BarLod | None = None
    #: Busy time per row (µs), to pick the colour where categories share a pixel.
    row_total: np.ndarray | None = None

    def make_lod(self, n_rows: int) -> None:
        """Build the level-of-detail grid when there are enough bars to need it."""
        if len(self.x0) >= BarLod.MIN_BARS:
            self.lod = BarLod(self.x0, self.x1, self.row, n_rows)


def group_bars(
    rows: ChartRows, mask: np.ndarray | None = None, kernels_by_name: bool = False
) -> list[BarGroup]:
    """Split a chart's bars by colour (``mask`` selects a subset); ``kernels_by_name`` gives
    each kernel a colour of :data:`KERNEL_PALETTE` from its label."""
    kind_colour = [CATEGORY_COLOUR[OP_CATEGORY[k]] for k in OP_KINDS]
    colours = sorted(set(kind_colour))
    colour_of_kind = np.array([colours.index(c) for c in kind_colour], np.int16)
    sel = np.arange(len(rows.bar_x0)) if mask is None else np.flatnonzero(mask)
    cidx = colour_of_kind[rows.bar_kind[sel].astype(np.int64)] if len(sel) else sel
    if kernels_by_name and rows.timeline is not None and len(sel):
        palette = []  # colour number of each palette entry (the first is the kernel green)
        for c in KERNEL_PALETTE:
            if c not in colours:
                colours.append(c)
            palette.append(colours.index(c))
        kernel = np.flatnonzero(rows.bar_kind[sel] == _KERNEL)
        ops = rows.bar_op[sel[kernel]]
        codes = label_colour_codes(rows.timeline.labels, ops, len(KERNEL_PALETTE))
        cidx = cidx.copy()
        cidx[kernel] = np.asarray(palette, np.int16)[codes]
    groups = []
    for ci, colour in enumerate(colours):
        idx = sel[cidx == ci]  # stays sorted by start: bar arrays are sorted
        if not len(idx):
            continue
        x0, x1 = rows.bar_x0[idx], rows.bar_x1[idx]
        groups.append(
            BarGroup(
                QColor(colour),
                x0,
                x1,
                rows.bar_row[idx],
                rows.bar_op[idx],
                float((x1 - x0).max()),
            )
        )
    for g in groups:
        g.make_lod(len(rows.keys))
    # long bars first, so short ones (API calls inside a long sync on the host row) stay on top
    groups.sort(key=lambda g: -float(np.median(g.x1 - g.x0)))
    return groups


def op_label_getter(tl: Timeline) -> Callable[[int], str]:
    """The bar text of a timeline row: its label, or its kind when unlabelled."""

    def label_of(row: int) -> str:
        return tl.labels[row] or OP_TITLE[tl.op_kind(row)]

    return label_of


@dataclass
class BarStyle:
    """How :func:`draw_bars` paints: filled with labels, or outlines only."""

    outline: QPen | None = None
    fill: bool = True
    #: The text of a bar from its op (timeline row); None draws no labels.
    labels: Callable[[int], str] | None = None
    font: QFont | None = None
    #: Rows whose bars get no labels (a collapsed group's summary row: its bars overlap).
    unlabelled_rows: np.ndarray | None = None


def draw_bars(
    painter: QPainter,
    groups: list[BarGroup],
    view: tuple[float, float],
    x_map: tuple[float, float],
    y_map: tuple[float, float],
    n_rows: int,
    style: BarStyle,
    labels_out: list[tuple[int, float, float]] | None = None,
) -> int:
    """Paint the visible bars in pixel coordinates; returns how many rectangles were drawn.

    ``x_map``/``y_map`` are (scale, offset) from chart units (µs, row) to pixels; the
    painter must have no transform other than pixels. Merged sub-pixel runs are shaded by
    how much of their pixels the bars cover. ``labels_out`` collects (op, left px, right px)
    of each label box drawn.
    """
    sx = x_map[0]
    split = [(g, *_visible(g, view, sx, x_map[1], n_rows)) for g in groups]
    drawn = 0
    if style.fill and style.outline is None and is_raster(painter):
        # merged sub-pixel bars as shaded pixel strips, under the exact bars
        drawn += _draw_strips(painter, split, y_map, n_rows)
        visible = [
            (g, (*exact, np.full(len(exact[0]), SHADE_LEVELS, np.int8))) for g, exact, _ in split
        ]
    else:  # vectors (SVG, PDF) or outlines: merged runs as rectangles of a few shades
        visible = [(g, _with_runs(exact, covs, style.fill)) for g, exact, covs in split]
    # merged sub-pixel runs first; where categories share a pixel, each row shows the one
    # with the most busy time on that row last (on top); then exact bars on top, long ones
    # under short ones
    merged = [(g, tuple(a[v[3] < 0] for a in v)) for g, v in visible if (v[3] < 0).any()]
    layers = list(merged)
    if len(merged) > 1:
        totals = np.stack([_row_totals(g, n_rows) for g, _ in merged])
        dominant = totals.argmax(axis=0)
        tops = [dominant[v[2]] == i for i, (_, v) in enumerate(merged)]
        layers = [(g, tuple(a[~t] for a in v)) for (g, v), t in zip(merged, tops, strict=True)]
        layers += [(g, tuple(a[t] for a in v)) for (g, v), t in zip(merged, tops, strict=True)]
    layers += [(g, tuple(a[v[3] >= 0] for a in v)) for g, v in visible]
    view_px = (view[0] * sx + x_map[1], view[1] * sx + x_map[1])
    if view_px[0] > view_px[1]:
        view_px = (view_px[1], view_px[0])
    label_jobs = []
    for g, (p0, p1, r, o, shade) in layers:
        if not len(p0):
            continue
        top, h = _bar_rows(r, y_map)
        w = np.maximum(p1 - p0, 1.0)
        _set_bar_pen(painter, g.colour, style)
        if style.fill and style.outline is None:
            _draw_shaded_rects(painter, g.colour, p0, top, w, h, o >= 0, shade)
        else:
            _draw_rects(painter, p0, top, w, h)
        drawn += len(p0)
        if style.labels is not None:
            idx, lx0, lx1 = label_spans(p0, p0 + w, o, view_px, MIN_LABEL_PX)
            if style.unlabelled_rows is not None and len(idx):
                keep = ~style.unlabelled_rows[r[idx]]
                idx, lx0, lx1 = idx[keep], lx0[keep], lx1[keep]
            if len(idx):
                idx, lx0, lx1 = idx[:MAX_LABELS], lx0[:MAX_LABELS], lx1[:MAX_LABELS]
                label_jobs.append((g.colour, lx0, lx1, top[idx], h[idx], o[idx]))
    if label_jobs:
        _draw_labels(painter, label_jobs, style, labels_out)
    return drawn


def _draw_shaded_rects(
    painter: QPainter,
    colour: QColor,
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    h: np.ndarray,
    exact: np.ndarray,
    shade: np.ndarray,
) -> None:
    """Filled bars; merged runs that cover part of their pixels in a lighter (more
    transparent) fill, one call per shade, so a 39 %-busy stretch does not read as solid."""
    full = shade >= SHADE_LEVELS
    if not full.all():
        for level in np.unique(shade[~full]).tolist():
            part = shade == level
            fill = QColor(colour)
            fill.setAlphaF(level / SHADE_LEVELS)
            painter.setBrush(fill)
            _draw_rects(painter, x[part], y[part], w[part], h[part])
        painter.setBrush(colour)
        x, y, w, h, exact = x[full], y[full], w[full], h[full], exact[full]
    _draw_edged_rects(painter, colour, x, y, w, h, exact)


def _draw_edged_rects(
    painter: QPainter,
    colour: QColor,
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    h: np.ndarray,
    exact: np.ndarray,
) -> None:
    """Filled bars; the wide exact ones (not merged pixel runs) with a darker 1 px edge.

    Two drawRects calls per colour at most: narrow bars and runs without pen, then wide bars
    with a cosmetic pen on a rect 1 px smaller, so they cover exactly the same pixels.
    """
    edged = exact & (w >= EDGE_MIN_PX)
    plain = ~edged
    if plain.any():
        _draw_rects(painter, x[plain], y[plain], w[plain], h[plain])
    if edged.any():
        pen = QPen(colour.darker(150), 1)
        pen.setCosmetic(True)
        painter.setPen(pen)
        _draw_rects(painter, x[edged], y[edged], w[edged] - 1.0, h[edged] - 1.0)
        painter.setPen(Qt.PenStyle.NoPen)


def _row_totals(g: BarGroup, n_rows: int) -> np.ndarray:
    """Busy time of a group on each row (cached: the bars do not change)."""
    if g.row_total is None or len(g.row_total) != n_rows:
        g.row_total = np.bincount(g.row, weights=g.x1 - g.x0, minlength=n_rows)[:n_rows]
    return g.row_total


def _bar_rows(r: np.ndarray, y_map: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Top and height in pixels of bars on rows ``r``."""
    sy, dy = y_map
    ya = (r + BAR_TOP) * sy + dy
    yb = (r + BAR_TOP + BAR_HEIGHT) * sy + dy
    return np.minimum(ya, yb), np.abs(yb - ya)


def _set_bar_pen(painter: QPainter, colour: QColor, style: BarStyle) -> None:
    if style.fill:
        painter.setBrush(colour)
        painter.setPen(Qt.PenStyle.NoPen if style.outline is None else style.outline)
    else:
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(
            QPen(style.outline) if style.outline is not None else QPen(colour.darker(140))
        )


def _visible(
    g: BarGroup, view: tuple[float, float], sx: float, dx: float, n_rows: int
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], list[Coverage]]:
    """A group's visible bars: (px0, px1, row, op) of those drawn as they are, and the
    coverage of the merged narrow ones (from its level of detail when zoomed out)."""
    lod = g.lod.coverage(view, sx, dx) if g.lod is not None else None
    if lod is None:
        exact, cov = cull_bars_split(g.x0, g.x1, g.row, g.op, g.max_width, view, sx, dx, n_rows)
        return exact, [cov] if cov is not None else []
    i = g.lod.long_idx
    exact, cov = cull_bars_split(
        g.x0[i], g.x1[i], g.row[i], g.op[i], g.max_width, view, sx, dx, n_rows
    )
    return exact, [lod] + ([cov] if cov is not None else [])


def _with_runs(
    exact: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    covs: list[Coverage],
    shaded: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact bars and merged runs (op -1) in one (px0, px1, row, op, shade); ``shaded`` False
    gives plain covered runs (outlines)."""
    levels = SHADE_LEVELS if shaded else 1
    parts = [(*exact, np.full(len(exact[0]), levels, np.int8))]
    for cov in covs:
        p0, p1, r, shade = cov.runs(levels)
        if not shaded:
            shade = np.full(len(p0), SHADE_LEVELS, np.int8)
        parts.append(
            (p0, p1, r.astype(exact[2].dtype), np.full(len(p0), -1, exact[3].dtype), shade)
        )
    return tuple(np.concatenate(cols) for cols in zip(*parts, strict=True))  # type: ignore[return-value]


def _draw_strips(painter: QPainter, split: list, y_map: tuple[float, float], n_rows: int) -> int:
    """The merged coverage of every group as shaded strips; where groups share a row, the
    one with the most busy time on it on top."""
    layers = [(g.colour, cov, i) for i, (g, _, covs) in enumerate(split) for cov in covs]
    if not layers:
        return 0
    dominant = None
    if len({i for _, _, i in layers}) > 1:
        totals = np.stack([_row_totals(g, n_rows) for g, _, _ in split])
        dominant = totals.argmax(axis=0)
    painter.setPen(Qt.PenStyle.NoPen)
    return draw_coverages(painter, layers, y_map, BAR_TOP, BAR_HEIGHT, dominant)


def _draw_labels(
    painter: QPainter,
    jobs: list,
    style: BarStyle,
    labels_out: list[tuple[int, float, float]] | None = None,
) -> None:
    font = style.font or painter.font()
    painter.setFont(font)
    fm = QFontMetricsF(font)
    min_h = fm.height() * 0.8
    label_of = style.labels
    assert label_of is not None
    for colour, lx0, lx1, top, h, ops in jobs:
        painter.setPen(text_colour_on(colour))
        for x0, x1, y, height, op in zip(
            lx0.tolist(), lx1.tolist(), top.tolist(), h.tolist(), ops.tolist(), strict=True
        ):
            if height < min_h:
                continue
            inner = QRectF(x0 + 3, y, x1 - x0 - 6, height)
            text = fm.elidedText(label_of(op), Qt.TextElideMode.ElideRight, inner.width())
            if text and text != "…":
                painter.drawText(
                    inner, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text
                )
                if labels_out is not None:
                    labels_out.append((op, x0, x1))


def draw_marks(
    painter: QPainter,
    rows: ChartRows,
    bar_idx: np.ndarray,
    view: tuple[float, float],
    x_map: tuple[float, float],
    y_map: tuple[float, float],
    pen: QPen,
    marker: bool = False,
) -> None:
    """Outline chosen bars (selection, flags); ``marker`` adds a triangle above each."""
    if not len(bar_idx):
        return
    x0, x1 = rows.bar_x0[bar_idx], rows.bar_x1[bar_idx]
    vis = (x1 >= view[0]) & (x0 <= view[1])
    bar_idx = bar_idx[vis][:5000]
    sx, dx = x_map
    sy, dy = y_map
    p0 = rows.bar_x0[bar_idx] * sx + dx
    p1 = rows.bar_x1[bar_idx] * sx + dx
    r = rows.bar_row[bar_idx]
    ya = (r + BAR_TOP) * sy + dy
    yb = (r + BAR_TOP + BAR_HEIGHT) * sy + dy
    top, h = np.minimum(ya, yb), np.abs(yb - ya)
    w = np.maximum(p1 - p0, 1.0)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.setPen(pen)
    _draw_rects(painter, p0 - 1, top - 1, w + 2, h + 2)
    if marker:
        painter.setBrush(pen.color())
        painter.setPen(Qt.PenStyle.NoPen)
        for x, y in zip(p0.tolist(), top.tolist(), strict=True):
            painter.drawPolygon(
                QPolygonF([QPointF(x - 4, y - 6), QPointF(x + 4, y - 6), QPointF(x, y - 1)])
            )


class GanttBarsItem(pg.GraphicsObject):
    """All bars of one chart. X is µs from the timeline's t0, row ``i`` spans y in [i, i + 1).

    ``outline_only`` draws hollow bars (another timeline overlaid on this one). A highlight
    set (selected ops) and a flag set (ops far from the model) are outlined on top.
    """

    def __init__(self, outline_only: bool = False) -> None:
        super().__init__()
        self.outline_only = outline_only
        self.rows: ChartRows | None = None
        self._groups: list[BarGroup] = []
        self._labels: Callable[[int], str] | None = None
        self._highlight = np.zeros(0, np.int64)
        self._flags = np.zeros(0, np.int64)
        self.highlight_pen = QPen(QColor("#000000"), 2.5)
        self.outline_pen: QPen | None = None
        self.last_drawn = 0
        #: (op, left px, right px) of each label drawn by the last paint.
        self.last_labels: list[tuple[int, float, float]] = []
        self.kernels_by_name = False
        self._bounds = QRectF()

    # -- data -------------------------------------------------------------------------------------
    def set_rows(self, rows: ChartRows | None) -> None:
        """Show the bars of ``rows`` (None clears)."""
        self.prepareGeometryChange()
        self.rows = rows
        groups = group_bars(rows, kernels_by_name=self.kernels_by_name) if rows is not None else []
        self._groups = groups
        self._labels = None
        if rows is not None and rows.timeline is not None and not self.outline_only:
            self._labels = op_label_getter(rows.timeline)
        self._highlight = np.zeros(0, np.int64)
        self._flags = np.zeros(0, np.int64)
        if rows is not None and len(rows.bar_x0):
            x0, x1 = float(rows.bar_x0.min()), float(rows.bar_x1.max())
            self._bounds = QRectF(x0, 0.0, max(x1 - x0, 1e-3), float(len(rows.keys)))
        else:
            self._bounds = QRectF(0.0, 0.0, 1.0, float(len(rows.keys) if rows else 1))
        self.update()

    def set_kernels_by_name(self, on: bool) -> None:
        """Colour kernels by a stable hash of their name (True) or all alike (False)."""
        if bool(on) != self.kernels_by_name:
            self.kernels_by_name = bool(on)
            if self.rows is not None:
                self._groups = group_bars(self.rows, kernels_by_name=self.kernels_by_name)
            self.update()

    def _bars_of_ops(self, ops: np.ndarray) -> np.ndarray:
        if self.rows is None or not len(ops):
            return np.zeros(0, np.int64)
        return np.flatnonzero(np.isin(self.rows.bar_op, ops))

    def set_highlight(self, ops: list[int] | np.ndarray) -> None:
        """Outline the bars of these timeline rows (the selection)."""
        self._highlight = self._bars_of_ops(np.asarray(ops, np.int64))
        self.update()

    def set_flags(self, ops: list[int] | np.ndarray) -> None:
        """Outline these timeline rows in red with a marker (measured far from the model)."""
        self._flags = self._bars_of_ops(np.asarray(ops, np.int64))
        self.update()

    def bar_at(self, x: float, y: float, tolerance: float = 0.0) -> int | None:
        """The timeline row of the bar under (x, y) in chart units, the shortest if several."""
        rows = self.rows
        if rows is None or not len(rows.bar_x0):
            return None
        r = int(np.floor(y))
        frac = y - r
        if frac < BAR_TOP - 0.05 or frac > BAR_TOP + BAR_HEIGHT + 0.05:
            return None
        width = max(g.max_width for g in self._groups) if self._groups else 0.0
        lo = int(np.searchsorted(rows.bar_x0, x - width - tolerance, "left"))
        hi = int(np.searchsorted(rows.bar_x0, x + tolerance, "right"))
        cand = np.arange(lo, hi)
        cand = cand[(rows.bar_row[cand] == r) & (rows.bar_x1[cand] >= x - tolerance)]
        if not len(cand):
            return None
        dur = rows.bar_x1[cand] - rows.bar_x0[cand]
        inside = (rows.bar_x0[cand] <= x) & (rows.bar_x1[cand] >= x)
        pick = cand[inside][np.argmin(dur[inside])] if inside.any() else cand[np.argmin(dur)]
        return int(rows.bar_op[pick])

    # -- QGraphicsItem ----------------------------------------------------------------------------
    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        return self._bounds

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: ANN001
        view = self.viewRect()
        if self.rows is None or view is None:
            return
        t = painter.transform()
        x_map, y_map = (t.m11(), t.m31()), (t.m22(), t.m32())
        vis = (view.left(), view.right())
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        style = BarStyle(
            outline=self.outline_pen,
            fill=not self.outline_only,
            labels=self._labels,
            unlabelled_rows=summary_row_mask(self.rows.keys),
        )
        n_rows = len(self.rows.keys)
        self.last_labels = []
        self.last_drawn = draw_bars(
            painter, self._groups, vis, x_map, y_map, n_rows, style, self.last_labels
        )
        draw_marks(
            painter, self.rows, self._flags, vis, x_map, y_map, QPen(QColor(FLAG_COLOUR), 2), True
        )
        draw_marks(painter, self.rows, self._highlight, vis, x_map, y_map, self.highlight_pen)
        painter.restore()
