"""The Gantt chart of one timeline: host, stream, engine and SM-occupancy rows.

Times in this widget's API (``x_range_ns``, ``set_cursor``...) are int nanoseconds from the
timeline's start (``Timeline.t0``), so a simulated and a measured run line up at zero.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPointF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QKeyEvent,
    QPalette,
    QPen,
)
from PySide6.QtWidgets import QToolTip, QVBoxLayout, QWidget

from swimlanes.timeline.timeline import DEP_KINDS, Timeline
from swimlanes.ui.gantt.axes import GROUP_GUTTER_PX, RowAxisItem, TimeAxisItem
from swimlanes.ui.gantt.bars import GanttBarsItem, legend_entries
from swimlanes.ui.gantt.decorations import (
    DEP_STYLE,
    DEP_TITLE,
    DependencyArrowsItem,
    LegendBar,
    RowBandsItem,
)
from swimlanes.ui.gantt.device_items import COLLECTIVE_LEGEND, CollectiveLinksItem
from swimlanes.ui.gantt.matches import SearchMarksItem
from swimlanes.ui.gantt.occupancy import OccupancyItem
from swimlanes.ui.gantt.range_panel import LIVE_LIMIT, RangeStatsPanel
from swimlanes.ui.gantt.row_controls import RowGroupsMixin
from swimlanes.ui.gantt.row_keys import is_compute_row, is_host_row
from swimlanes.ui.gantt.rows import (
    ChartRows,
    build_rows,
    dependency_segments,
    format_duration,
    occupancy_tooltip,
    op_tooltip,
)
from swimlanes.ui.gantt.viewbox import ChartViewBox
from swimlanes.ui.style import CATEGORY_COLOUR, OKABE_ITO

ZOOM_STEP = 0.8
PAN_STEP = 0.1
#: Rows never get thinner than this (pixels): row titles stay apart and bars stay clickable.
MIN_ROW_PX = 20
#: How far below its axis pyqtgraph draws a bottom axis' title.
AXIS_TITLE_NUDGE_PX = 5


class GanttChart(RowGroupsMixin, QWidget):
    """One timeline as a Gantt chart, with selection, hover, dependencies, ruler and cursor."""

    selection_changed = Signal(list)
    #: The legend's (text, colour, shape) entries changed (a shared legend follows them).
    legend_changed = Signal(list)
    #: The user zoomed or panned (False), or asked to see the whole timeline (True).
    view_changed_by_user = Signal(bool)
    #: The rows shown changed (a group collapsed or expanded, a row pinned, another layout).
    rows_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._timeline: Timeline | None = None
        self.legend_items: list[tuple[str, str, str]] = []
        self._overlay_tl: Timeline | None = None
        self._layout_rows: list[str] | None = None
        self._layout_devices: dict[str, str] = {}
        self._stream_info: dict[str, dict] | None = None
        self._selection: list[int] = []
        self._flags: list[int] = []
        self.rows_model: ChartRows = build_rows(None)
        self.hover_text = ""

        self.legend = LegendBar(self)
        self._vb = ChartViewBox()
        self._row_axis = RowAxisItem()
        self.plot_widget = pg.PlotWidget(
            viewBox=self._vb, axisItems={"bottom": TimeAxisItem(), "left": self._row_axis}
        )
        self.plot_item: pg.PlotItem = self.plot_widget.getPlotItem()
        self.plot_item.hideButtons()
        self.plot_item.setMenuEnabled(False)
        self.plot_item.getAxis("left").setWidth(110)
        # pyqtgraph draws the time axis title 5 px below its axis (AxisItem.resizeEvent's
        # nudge): a bottom margin that wide keeps the title inside the widget.
        left, top, right, bottom = self.plot_item.layout.getContentsMargins()
        self.plot_item.layout.setContentsMargins(left, top, right, max(bottom, AXIS_TITLE_NUDGE_PX))
        self.plot_widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.plot_widget.installEventFilter(self)

        self._bands = RowBandsItem()
        self._bars = GanttBarsItem()
        self._occupancy = OccupancyItem()
        self._collectives = CollectiveLinksItem()
        self._overlay = GanttBarsItem(outline_only=True)
        self._overlay.setZValue(5)
        self._arrows = DependencyArrowsItem()
        self._matches = SearchMarksItem(self._bars)  # search results, above the bars
        self._matches.setZValue(10)
        self._cursor = pg.InfiniteLine(angle=90, movable=False)
        self._cursor.setZValue(30)
        self._cursor.hide()
        self._ruler = pg.LinearRegionItem(orientation="vertical", movable=True)
        self._ruler.setZValue(25)
        self._ruler_text = pg.TextItem(anchor=(0.5, 0.0))
        self._ruler_text.setZValue(26)
        for item in (
            self._bands,
            self._bars,
            self._occupancy,
            self._collectives,
            self._overlay,
            self._arrows,
        ):
            self._vb.addItem(item)
        for item in (self._matches, self._cursor, self._ruler, self._ruler_text):
            self._vb.addItem(item, ignoreBounds=True)
        self._ruler.hide()
        self._ruler_text.hide()
        self._ruler.sigRegionChanged.connect(self._update_ruler_text)
        self._vb.clicked.connect(self._on_click)
        self._vb.sigRangeChangedManually.connect(
            lambda _mask: self.view_changed_by_user.emit(False)
        )
        self._vb.ruler_dragged.connect(self._on_ruler_drag)
        self.range_panel = RangeStatsPanel(self.plot_widget)
        self._ruler.sigRegionChanged.connect(lambda _r: self._update_range_panel(False))
        self._ruler.sigRegionChangeFinished.connect(lambda _r: self._update_range_panel(True))
        self._init_row_groups()
        self.plot_widget.scene().sigMouseMoved.connect(self._on_hover)

        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addWidget(self.legend)
        box.addWidget(self.plot_widget, 1)
        self._apply_palette()
        self._relayout(fit=True)

    # -- data -------------------------------------------------------------------------------------
    @property
    def timeline(self) -> Timeline | None:
        return self._timeline

    def set_timeline(self, tl: Timeline | None) -> None:
        """Show ``tl`` (None: empty rows). The zoom is kept unless the chart was empty."""
        fit = self._timeline is None or not len(self._timeline)
        self._timeline = tl
        self._relayout(fit=fit)

    def set_row_layout(self, rows: list[str] | None) -> None:
        """Force these rows in this order (rows missing from the timeline stay empty)."""
        rows = list(rows) if rows else None
        if rows == self._layout_rows:
            return  # set after every edit; the rows rarely change
        self._layout_rows = rows
        self._relayout(fit=False)

    def set_row_devices(self, devices: dict[str, str] | None) -> None:
        """Row key -> device of the forced layout's rows (rows of a multi-device timeline that
        this chart's own timeline may lack), so that they group by device too."""
        devices = dict(devices or {})
        if devices == self._layout_devices:
            return
        self._layout_devices = devices
        self._relayout(fit=False)

    def set_stream_info(self, info: dict[str, dict] | None) -> None:
        """Stream name -> {"kind", "priority"} shown in the row titles (see rows.stream_info_of)."""
        self._stream_info = dict(info) if info else None
        self._relayout(fit=False)

    def rows(self) -> list[str]:
        """Row keys top to bottom: "host", "stream:NAME", "engine:NAME", "compute", and
        "group:NAME" for a collapsed group's summary row (pinned rows come first); a
        multi-device timeline has "host:DEVICE", "compute:DEVICE" and "link:NAME" rows."""
        return list(self.rows_model.keys)

    def row_titles(self) -> list[str]:
        return list(self.rows_model.titles)

    def _relayout(self, fit: bool) -> None:
        arranged = self._arrange_rows()
        self.rows_model = build_rows(
            self._timeline, arranged.keys, self._stream_info, arranged.merge
        )
        for i, key in enumerate(self.rows_model.keys):
            self.rows_model.titles[i] = arranged.titles.get(key, self.rows_model.titles[i])
        self._row_axis.set_groups(arranged.spans)
        n = len(self.rows_model.keys)
        self._bands.n_rows = n
        self._bands.update()
        self._bars.set_rows(self.rows_model)
        self._occupancy.set_rows(self.rows_model)
        self._collectives.set_rows(self.rows_model)
        self._row_axis.set_titles(self.rows_model.titles)
        self._vb.setLimits(yMin=0, yMax=max(n, 1), minXRange=1e-3)
        self._vb.setYRange(0, max(n, 1), padding=0)
        self.plot_widget.setMinimumHeight(self.minimum_plot_height())
        self._set_overlay_rows()
        self._matches.set_rows(self.rows_model)
        self._refresh_marks()
        self._update_legend()
        if fit:
            self.fit_all()
        self.rows_changed.emit()

    # -- selection, flags, overlay ---------------------------------------------------------------
    def _ops_of(self, indexes: list[int]) -> np.ndarray:
        """Timeline rows of these program indexes."""
        if self._timeline is None or not indexes:
            return np.zeros(0, np.int64)
        return np.flatnonzero(np.isin(self._timeline.index, np.asarray(indexes, np.int64)))

    def selection(self) -> list[int]:
        return list(self._selection)

    def set_selection(self, indexes: list[int]) -> None:
        """Select ops by program index (no signal: the caller already knows)."""
        self._selection = sorted({int(i) for i in indexes})
        self._refresh_marks()

    def set_flags(self, indexes: list[int]) -> None:
        """Mark ops by program index with a red outline (e.g. far from the model)."""
        self._flags = sorted({int(i) for i in indexes})
        self._refresh_marks()
        self._update_legend()

    def flags(self) -> list[int]:
        return list(self._flags)

    def _refresh_marks(self) -> None:
        sel = self._ops_of(self._selection)
        self._bars.set_highlight(sel)
        self._bars.set_flags(self._ops_of(self._flags))
        self._arrows.set_segments(dependency_segments(self.rows_model, sel[:50]))

    def set_search_matches(
        self, op_mask: np.ndarray | None, dim: bool = False, current: np.ndarray | None = None
    ) -> None:
        """Outline the ops a search found (a mask over timeline rows; None clears); ``dim``
        veils every other bar; ``current`` (timeline rows) is the match stepped to."""
        base = self.palette().color(QPalette.ColorRole.Base)
        self._matches.veil = QColor(base.red(), base.green(), base.blue(), 200)
        self._matches.current_pen = QPen(self._text_colour(), 3.0)
        self._matches.set_matches(op_mask, dim, current)

    def search_marks(self) -> SearchMarksItem:
        """The item that draws search matches (tests and tools)."""
        return self._matches

    def set_kernels_by_name(self, on: bool) -> None:
        """Colour each kernel by its name (a stable hash over a palette of greens, teals and
        purples) or all kernels alike."""
        self._bars.set_kernels_by_name(on)
        self._update_legend()

    def set_overlay(self, tl: Timeline | None) -> None:
        """Draw another timeline's device spans as outlines on this chart's rows."""
        self._overlay_tl = tl
        self._set_overlay_rows()
        self._update_legend()

    def _set_overlay_rows(self) -> None:
        if self._overlay_tl is None:
            self._overlay.set_rows(None)
            return
        keys = self.rows_model.keys
        rows = build_rows(self._overlay_tl, keys, merge=self.row_arrangement.merge)
        # only device spans on rows this chart has; occupancy is not a bar row
        own = rows.bar_row < len(keys)
        for i, key in enumerate(keys):
            if is_host_row(key) or is_compute_row(key):
                own &= rows.bar_row != i
        for name in ("bar_x0", "bar_x1", "bar_row", "bar_op", "bar_kind"):
            setattr(rows, name, getattr(rows, name)[own])
        rows.keys = keys
        self._overlay.set_rows(rows)

    def _update_legend(self) -> None:
        entries = [
            (c, colour, "palette" if "," in colour else "box")
            for c, colour in legend_entries(self._timeline, self._bars.kernels_by_name)
        ]
        if self.rows_model.compute_row is not None:
            entries.append(
                ("SM occupancy", QColor(CATEGORY_COLOUR["Kernel"]).lighter(120).name(), "box")
            )
        if len(self.rows_model.collectives):
            entries.append((COLLECTIVE_LEGEND, self._collectives.colour.name(), "line"))
        if self._overlay_tl is not None:
            entries.append(("simulated (outline)", self._text_colour().name(), "outline"))
        if self._flags:
            entries.append(("far from the model", "#E8000B", "outline"))
        tl = self._timeline
        if tl is not None and len(tl.dep_kind):
            for k in sorted(set(tl.dep_kind.tolist())):
                colour, _ = DEP_STYLE[DEP_KINDS[k]]
                entries.append(
                    (DEP_TITLE[DEP_KINDS[k]], colour or self._text_colour().name(), "line")
                )
        self.legend.set_entries(entries)
        if entries != self.legend_items:
            self.legend_items = entries
            self.legend_changed.emit(list(entries))

    def minimum_plot_height(self, max_rows: int | None = None) -> int:
        """Pixels the plot needs so that every row (or ``max_rows`` of them) is at least
        MIN_ROW_PX high."""
        axis = self.plot_item.getAxis("bottom")
        # the axis' minimum is what it wants now; its height follows one layout pass later
        axis_h = max(int(axis.minimumHeight()), 1)
        rows = max(len(self.rows_model.keys), 1)
        if max_rows is not None:
            rows = min(rows, max_rows)
        # the plot item's own margins (the bottom one under the axis title) and the view's frame
        return rows * MIN_ROW_PX + int(axis_h) + 8 + AXIS_TITLE_NUDGE_PX

    def set_time_axis_title_shown(self, on: bool) -> None:
        """Show or hide "time since start (ms)" under the time axis (its ticks stay)."""
        axis = self.plot_item.getAxis("bottom")
        if axis.label.isVisible() != on:
            axis.showLabel(on)
            self.plot_widget.setMinimumHeight(self.minimum_plot_height())

    def row_height_px(self) -> float:
        """Current height of one row on screen, in pixels."""
        return float(self._vb.sceneBoundingRect().height()) / max(len(self.rows_model.keys), 1)

    # -- view -------------------------------------------------------------------------------------
    def fit_all(self) -> None:
        """Show the whole timeline."""
        span = self.rows_model.span_us
        if self._overlay_tl is not None:
            span = max(span, self._overlay_tl.makespan_ns / 1000.0)
        span = span if span > 0 else 1.0
        self._vb.setXRange(0.0, span, padding=0.02)

    def x_range_ns(self) -> tuple[int, int]:
        """The visible time range, ns from the timeline start."""
        lo, hi = self._vb.viewRange()[0]
        return round(lo * 1000.0), round(hi * 1000.0)

    def set_x_range_ns(self, t0: int, t1: int) -> None:
        self._vb.setXRange(t0 / 1000.0, t1 / 1000.0, padding=0)

    def set_cursor(self, t_ns: int | None) -> None:
        """The play cursor at ``t_ns`` from the start (None hides it)."""
        if t_ns is None:
            self._cursor.hide()
        else:
            self._cursor.setPos(t_ns / 1000.0)
            self._cursor.show()

    @property
    def left_axis_width(self) -> int:
        return int(self.plot_item.getAxis("left").width())

    @left_axis_width.setter
    def left_axis_width(self, width: int) -> None:
        self.plot_item.getAxis("left").setWidth(int(width))

    def preferred_left_axis_width(self) -> int:
        """Wide enough for the longest row title."""
        fm = self.fontMetrics()
        titles = self.rows_model.titles or ["Host"]
        return max(fm.horizontalAdvance(t) for t in titles) + 16 + GROUP_GUTTER_PX

    def scene_x_of_ns(self, t_ns: int) -> float:
        """Where time ``t_ns`` (from the start) is, in the plot widget's viewport pixels."""
        scene = self._vb.mapViewToScene(QPointF(t_ns / 1000.0, 0.0))
        return self.plot_widget.mapFromScene(scene).x()

    def viewport_pos_of(self, t_ns: int, row: int) -> QPointF:
        """Viewport pixel of a time on a row's centre line (for tests and tools)."""
        scene = self._vb.mapViewToScene(QPointF(t_ns / 1000.0, row + 0.5))
        return QPointF(self.plot_widget.mapFromScene(scene))

    def zoom(self, factor: float, centre_us: float | None = None) -> None:
        """Zoom the time axis (the user's action: the view stops following new results)."""
        lo, hi = self._vb.viewRange()[0]
        c = (lo + hi) / 2 if centre_us is None else centre_us
        self._vb.setXRange(c - (c - lo) * factor, c + (hi - c) * factor, padding=0)
        self.view_changed_by_user.emit(False)

    def pan(self, fraction: float) -> None:
        """Pan by a fraction of the visible range (the user's action, like :meth:`zoom`)."""
        lo, hi = self._vb.viewRange()[0]
        d = (hi - lo) * fraction
        self._vb.setXRange(lo + d, hi + d, padding=0)
        self.view_changed_by_user.emit(False)

    def set_greyed(self, on: bool) -> None:
        """Draw the schedule faded: it no longer matches the document (a failed simulation)."""
        for item in (self._bars, self._occupancy, self._collectives, self._overlay, self._arrows):
            item.setOpacity(0.25 if on else 1.0)

    def is_greyed(self) -> bool:
        return self._bars.opacity() < 1.0

    # -- ruler ------------------------------------------------------------------------------------
    def set_ruler_enabled(self, on: bool) -> None:
        """Ruler mode: a plain drag measures instead of panning (shift-drag always measures)."""
        self._vb.ruler_mode = on
        if not on:
            self.clear_ruler()

    def clear_ruler(self) -> None:
        """Hide the measured span (Escape, or another document)."""
        self._ruler.hide()
        self._ruler_text.hide()
        self.range_panel.hide()

    def set_ruler_ns(self, t0: int, t1: int, finished: bool = True) -> None:
        """Measure ``[t0, t1]`` (ns from the start); ``finished`` False: a drag still moving
        (the range's figures then wait for its end on a large timeline)."""
        self._ruler.setRegion((t0 / 1000.0, t1 / 1000.0))
        self._ruler.show()
        self._ruler_text.show()
        self._update_ruler_text()
        if finished:
            self._update_range_panel(True)

    def ruler_ns(self) -> tuple[int, int] | None:
        if not self._ruler.isVisible():
            return None
        a, b = self._ruler.getRegion()
        return round(a * 1000.0), round(b * 1000.0)

    def ruler_text(self) -> str:
        return self._ruler_text.toPlainText() if self._ruler.isVisible() else ""

    def _on_ruler_drag(self, a: float, b: float, finished: bool) -> None:
        self.set_ruler_ns(round(min(a, b) * 1000), round(max(a, b) * 1000), finished)

    def _update_range_panel(self, finished: bool) -> None:
        """The range's figures, live while dragging unless the timeline is large."""
        tl = self._timeline
        if not self._ruler.isVisible() or tl is None:
            return
        if finished or len(tl) <= LIVE_LIMIT:
            self.range_panel.show_range(tl, *self.ruler_ns())

    def _update_ruler_text(self) -> None:
        a, b = self._ruler.getRegion()
        self._ruler_text.setText(f"Δ {format_duration((b - a) * 1000.0)}")
        self._ruler_text.setPos((a + b) / 2, 0.0)

    # -- mouse and keys ---------------------------------------------------------------------------
    def _tolerance_us(self) -> float:
        w = self._vb.viewPixelSize()[0]
        return 3.0 * w

    def _on_click(self, x: float, y: float, modifiers: Qt.KeyboardModifier) -> None:
        op = self._bars.bar_at(x, y, self._tolerance_us())
        extend = bool(
            modifiers & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
        )
        chosen = set(self._selection) if extend else set()
        if op is not None and self._timeline is not None:
            index = int(self._timeline.index[op])
            if extend and index in chosen:
                chosen.discard(index)
            else:
                chosen.add(index)
        new = sorted(chosen)
        if new != self._selection:
            self._selection = new
            self._refresh_marks()
            self.selection_changed.emit(list(new))

    def op_at(self, viewport_pos: QPointF) -> int | None:
        """The program index of the op under a viewport pixel, if any."""
        scene = self.plot_widget.mapToScene(viewport_pos.toPoint())
        p = self._vb.mapSceneToView(scene)
        op = self._bars.bar_at(p.x(), p.y(), self._tolerance_us())
        if op is None or self._timeline is None:
            return None
        return int(self._timeline.index[op])

    def _on_hover(self, scene_pos: QPointF) -> None:
        text = ""
        if self._timeline is not None and self._vb.sceneBoundingRect().contains(scene_pos):
            p = self._vb.mapSceneToView(scene_pos)
            op = self._bars.bar_at(p.x(), p.y(), self._tolerance_us())
            if op is not None:
                text = op_tooltip(self._timeline, op)
            elif self.rows_model.occupancy_at_row(int(np.floor(p.y()))) is not None:
                text = occupancy_tooltip(self.rows_model, p.x(), int(np.floor(p.y())))
        if text == self.hover_text:
            return
        self.hover_text = text
        if text:
            pos = self.plot_widget.mapToGlobal(self.plot_widget.mapFromScene(scene_pos))
            QToolTip.showText(pos, text, self.plot_widget)
        else:
            QToolTip.hideText()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if obj is self.plot_widget and event.type() == QEvent.Type.KeyPress:
            return self._handle_key(event)  # type: ignore[arg-type]
        return super().eventFilter(obj, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        if not self._handle_key(event):
            super().keyPressEvent(event)

    def _handle_key(self, event: QKeyEvent) -> bool:
        key = event.key()
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom(ZOOM_STEP)
        elif key in (Qt.Key.Key_Minus, Qt.Key.Key_Underscore):
            self.zoom(1 / ZOOM_STEP)
        elif key == Qt.Key.Key_Left:
            self.pan(-PAN_STEP)
        elif key == Qt.Key.Key_Right:
            self.pan(PAN_STEP)
        elif key in (Qt.Key.Key_F, Qt.Key.Key_Home):
            self.fit_all()
            self.view_changed_by_user.emit(True)
        elif key == Qt.Key.Key_Escape and self._ruler.isVisible():
            self.clear_ruler()
        else:
            return False
        event.accept()
        return True

    # -- palette ----------------------------------------------------------------------------------
    def _text_colour(self) -> QColor:
        return self.palette().color(QPalette.ColorRole.Text)

    def _apply_palette(self) -> None:
        pal = self.palette()
        bg, fg = pal.color(QPalette.ColorRole.Base), self._text_colour()
        self.plot_widget.setBackground(bg)
        for name in ("left", "bottom"):
            axis = self.plot_item.getAxis(name)
            axis.setPen(pg.mkPen(fg))
            axis.setTextPen(pg.mkPen(fg))
        self._bands.colour = QColor(fg.red(), fg.green(), fg.blue(), 16)
        self._bars.highlight_pen = QPen(fg, 2.5)
        self._overlay.outline_pen = QPen(fg, 1.5, Qt.PenStyle.DashLine)
        self._arrows.text_colour = fg
        self._cursor.setPen(pg.mkPen(OKABE_ITO["vermillion"], width=2))
        self._ruler_text.setColor(fg)
        self._row_axis.colour = fg
        # a light veil in the text colour reads on both light and dark backgrounds
        self._ruler.setBrush(QColor(fg.red(), fg.green(), fg.blue(), 28))
        self._ruler.setHoverBrush(QColor(fg.red(), fg.green(), fg.blue(), 45))
        for line in self._ruler.lines:
            line.setPen(pg.mkPen(fg, width=1.5))
        self.plot_widget.update()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self._apply_palette()
            self._update_legend()
        super().changeEvent(event)
