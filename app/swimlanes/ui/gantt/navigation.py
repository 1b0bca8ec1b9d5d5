"""Keyboard navigation of the charts from anywhere in the window, and the zoom history.

Keys (none of them while typing in a text field, a spin box, a combo box or the code view):

==========================  =====================================================
W / S, + / -                zoom in / out around the mouse (over a chart) or the centre
A / D                       pan left / right
F                           zoom to the selected ops (the whole schedule with none)
Z                           zoom to the ruler's range (Shift+drag on a chart)
Ctrl+0                      fit all (a menu action)
Left / Right, Home          pan, fit all            } with the focus in the charts, so that
Backspace / Shift+Backspace zoom back / forward     } the lane editor keeps these keys
Alt+Left / Alt+Right        zoom back / forward     } (op navigation, delete, move)
Esc                         hide the ruler, then close the search bar
==========================  =====================================================

An event filter on the focus widget (moved along as the focus moves, within the charts'
window only) handles them before the widget sees the key. The zoom history records the view before each user
zoom; a burst of changes (a wheel spin, a drag, a held key) is one entry.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCursor, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QGraphicsTextItem,
    QGraphicsView,
    QKeySequenceEdit,
    QLineEdit,
    QMainWindow,
    QMenu,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

from swimlanes.ui.gantt.chart import PAN_STEP, ZOOM_STEP, GanttChart
from swimlanes.ui.gantt.search import extent_ns, framed_range

if TYPE_CHECKING:
    from swimlanes.ui.gantt.side_by_side import ComparisonCharts

#: Changes of the view closer together than this make one history entry.
HISTORY_SETTLE_MS = 600
HISTORY_LIMIT = 100
#: Margins around what a zoom frames, as a fraction of its width each side.
SELECTION_MARGIN = 0.05
RULER_MARGIN = 0.02

Range = tuple[int, int]
K = Qt.Key
_ZOOM_IN = {K.Key_W, K.Key_Plus, K.Key_Equal}
_ZOOM_OUT = {K.Key_S, K.Key_Minus, K.Key_Underscore}
_TEXT_WIDGETS = (
    QLineEdit,
    QAbstractSpinBox,
    QTextEdit,
    QPlainTextEdit,
    QComboBox,  # letters pick items in a combo box
    QKeySequenceEdit,
)


def _disconnect(signal: Any, slot: Callable[..., None]) -> None:
    with contextlib.suppress(RuntimeError, TypeError):  # already gone with the application
        signal.disconnect(slot)


class ZoomHistory:
    """Back and forward stacks of view ranges (ns), like a browser's history."""

    def __init__(self, limit: int = HISTORY_LIMIT) -> None:
        self.limit = limit
        self._back: list[Range] = []
        self._forward: list[Range] = []

    def record(self, view: Range) -> None:
        """The view before a new user zoom: back returns to it; forward is forgotten."""
        if not self._back or self._back[-1] != view:
            self._back.append(view)
            del self._back[: -self.limit]
        self._forward.clear()

    def back(self, current: Range) -> Range | None:
        """The view to go back to (None: none), remembering ``current`` for forward."""
        if not self._back:
            return None
        self._forward.append(current)
        return self._back.pop()

    def forward(self, current: Range) -> Range | None:
        if not self._forward:
            return None
        self._back.append(current)
        return self._forward.pop()

    def can_go_back(self) -> bool:
        return bool(self._back)

    def can_go_forward(self) -> bool:
        return bool(self._forward)


def is_text_input(widget: QWidget | None) -> bool:
    """Whether keys typed into ``widget`` are text (a field, the code view, an item being
    renamed in a graphics view): navigation keys must then stay with it."""
    if widget is None:
        return False
    if isinstance(widget, _TEXT_WIDGETS):
        return True
    if isinstance(widget, QGraphicsView) and widget.scene() is not None:
        item = widget.scene().focusItem()
        if isinstance(item, QGraphicsTextItem):
            return bool(item.textInteractionFlags() & Qt.TextInteractionFlag.TextEditable)
    return False


class ChartNavigation(QObject):
    """Zoom, pan, zoom to selection or ruler and the zoom history of a ComparisonCharts."""

    history_changed = Signal()

    def __init__(self, charts: ComparisonCharts) -> None:
        super().__init__(charts)
        self.charts = charts
        self.history = ZoomHistory()
        #: Escape with nothing else to hide calls this (the search bar closes).
        self.on_escape: Callable[[], bool] = lambda: False
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(HISTORY_SETTLE_MS)
        self._view = charts.x_range_ns()
        self._before = self._view
        vb = charts.simulated_chart.plot_item.getViewBox()
        vb.sigXRangeChanged.connect(self._on_range_changed)
        for chart in self._charts():
            chart.view_changed_by_user.connect(self._on_user_view)
        app = QApplication.instance()
        if isinstance(app, QApplication):
            # through a weak reference: the application's focus changes outlive these charts
            # (a bound method of a deleted QObject would fail when the signal fires)
            ref = weakref.ref(self)

            def on_focus_changed(old: QWidget | None, new: QWidget | None) -> None:
                nav = ref()
                if nav is not None and shiboken6.isValid(nav):
                    nav._on_focus_changed(old, new)

            app.focusChanged.connect(on_focus_changed)
            self.destroyed.connect(lambda: _disconnect(app.focusChanged, on_focus_changed))
            self._on_focus_changed(None, app.focusWidget())

    def _on_focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        # Keys go to the focus widget (to the window when nothing has the focus): watching
        # just that one costs nothing per event elsewhere, unlike an application-wide filter
        # (which slowed every event of the application down through Python).
        for widget in (new, *self._home_windows()):
            if widget is not None and self._in_home_window(widget):
                widget.installEventFilter(self)  # Qt keeps one entry per filter and widget

    def _charts(self) -> list[GanttChart]:
        return [self.charts.simulated_chart, self.charts.measured_chart]

    def _shown_charts(self) -> list[GanttChart]:
        return [c for c in self._charts() if c.isVisible()]

    # -- history ----------------------------------------------------------------------------
    def _on_range_changed(self, *_args: object) -> None:
        view = self.charts.x_range_ns()
        if view != self._view:  # a repeated signal must not overwrite the view before
            self._before, self._view = self._view, view

    def _on_user_view(self, _whole: bool) -> None:
        # the chart tells after the change: the view before it is the one to go back to
        self._note_user_change(self._before)

    def _note_user_change(self, before: Range) -> None:
        if not self._settle.isActive():
            self.history.record(before)
            self.history_changed.emit()
        self._settle.start()

    def _show_by_user(self, view: Range, coalesce: bool = False) -> None:
        """Show ``view`` as a user zoom. A single action (F, Z, fit all) is always its own
        history entry, and the next wheel spin or key burst starts another; ``coalesce``
        joins a run of them instead (stepping through search matches)."""
        if coalesce:
            self._note_user_change(self.charts.x_range_ns())
        else:
            self._record_now()
        self.charts.set_x_range_by_user(*view)

    def _record_now(self) -> None:
        self.history.record(self.charts.x_range_ns())
        self._settle.stop()
        self.history_changed.emit()

    def clear_history(self) -> None:
        """Forget the zooms (another document)."""
        self.history = ZoomHistory()
        self._settle.stop()
        self.history_changed.emit()

    def back(self) -> bool:
        """Return to the view before the last user zoom."""
        return self._go(self.history.back)

    def forward(self) -> bool:
        """Undo a :meth:`back`."""
        return self._go(self.history.forward)

    def _go(self, step: Callable[[Range], Range | None]) -> bool:
        self._settle.stop()  # the next zoom starts a new entry
        view = step(self.charts.x_range_ns())
        if view is not None:
            self.charts.set_x_range_by_user(*view)
        self.history_changed.emit()
        return view is not None

    # -- zooms ------------------------------------------------------------------------------
    def mouse_time_us(self) -> float | None:
        """The time under the mouse (µs on the charts' axis), None when not over a chart."""
        pos = QCursor.pos()
        for chart in self._shown_charts():
            viewport = chart.plot_widget.viewport()
            local = viewport.mapFromGlobal(pos)
            if not viewport.rect().contains(local):
                continue
            vb = chart.plot_item.getViewBox()
            scene = chart.plot_widget.mapToScene(local)
            if vb.sceneBoundingRect().contains(scene):
                return float(vb.mapSceneToView(scene).x())
        return None

    def zoom(self, factor: float) -> None:
        """Zoom by ``factor`` (< 1: in) around the mouse if over a chart, else the centre."""
        self.charts.simulated_chart.zoom(factor, self.mouse_time_us())

    def pan(self, fraction: float) -> None:
        self.charts.simulated_chart.pan(fraction)

    def fit_all(self) -> None:
        """Show everything (a user zoom: back returns to the view before)."""
        self._record_now()
        self.charts.fit_all()

    def zoom_to_selection(self) -> bool:
        """Fit the selected ops (in every chart) with a small margin; without a selection,
        fit all. False when the selected ops have no time in the charts."""
        indexes = self.charts.selection()
        if not indexes:
            self.fit_all()
            return True
        spans = []
        for chart in self._charts():
            tl = chart.timeline
            if tl is not None and len(tl):
                rows = np.flatnonzero(np.isin(tl.index, np.asarray(indexes, np.int64)))
                span = extent_ns(tl, rows)
                if span is not None:
                    spans.append(span)
        if not spans:
            return False
        lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
        self._show_by_user(framed_range(lo, hi, SELECTION_MARGIN))
        return True

    def ruler_range_ns(self) -> Range | None:
        """The measured range of the chart under the mouse, else of the first with one."""
        charts = self._shown_charts()
        x = self.mouse_time_us()
        if x is not None:
            charts.sort(key=lambda c: not c.plot_widget.underMouse())
        for chart in charts:
            span = chart.ruler_ns()
            if span is not None and span[1] > span[0]:
                return span
        return None

    def zoom_to_ruler(self) -> bool:
        """Fit the ruler's range (Shift+drag); False when there is no ruler."""
        span = self.ruler_range_ns()
        if span is None:
            return False
        self._show_by_user(framed_range(span[0], span[1], RULER_MARGIN))
        return True

    def centre_on(self, lo: int, hi: int) -> None:
        """Bring [lo, hi] (ns) to the middle of the view, keeping the zoom unless it does
        not fit (then frame it)."""
        v0, v1 = self.charts.x_range_ns()
        width = v1 - v0
        if hi - lo > 0.8 * width:
            view = framed_range(lo, hi, SELECTION_MARGIN)
        else:
            c = (lo + hi) / 2
            view = round(c - width / 2), round(c + width / 2)
        self._show_by_user(view, coalesce=True)

    # -- keys -------------------------------------------------------------------------------
    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() != QEvent.Type.KeyPress:
            return False
        focus = QApplication.focusWidget()
        homes = self._home_windows()
        if obj is not focus and not (focus is None and any(obj is w for w in homes)):
            return False  # the same key event also passes the window and the parents
        if not self._owns_window(obj) or is_text_input(focus):
            return False
        return self.handle_key(event, self._focus_in_charts(focus))  # type: ignore[arg-type]

    def _owns_window(self, obj: QObject) -> bool:
        if not isinstance(obj, QWidget) or not self.charts.isVisible():
            return False
        app = QApplication.instance()
        if isinstance(app, QApplication) and (app.activePopupWidget() or app.activeModalWidget()):
            return False
        return self._in_home_window(obj)

    def _in_home_window(self, widget: QWidget) -> bool:
        return any(widget.window() is w for w in self._home_windows())

    def _home_windows(self) -> list[QWidget]:
        """The charts' window and, when their dock floats, the main window it belongs to."""
        homes = [self.charts.window()]
        parent = self.charts.parentWidget()
        while parent is not None and not isinstance(parent, QMainWindow):
            parent = parent.parentWidget()
        if parent is not None and parent is not homes[0]:
            homes.append(parent)
        return homes

    def _focus_in_charts(self, focus: QWidget | None) -> bool:
        if focus is None or any(focus is w for w in self._home_windows()):
            return True
        return self.charts.isAncestorOf(focus)

    def handle_key(self, event: QKeyEvent, in_charts: bool) -> bool:
        """Act on a navigation key; ``in_charts``: the focus is in the charts (or nowhere),
        so the keys other widgets use (arrows, Backspace, Home, Esc) are ours too."""
        key = event.key()
        mods = event.modifiers() & ~(
            Qt.KeyboardModifier.KeypadModifier | Qt.KeyboardModifier.ShiftModifier
        )
        shift = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        plain = mods == Qt.KeyboardModifier.NoModifier
        alt = mods == Qt.KeyboardModifier.AltModifier
        if plain and key in _ZOOM_IN:
            self.zoom(ZOOM_STEP)
        elif plain and key in _ZOOM_OUT:
            self.zoom(1 / ZOOM_STEP)
        elif plain and key in (K.Key_A, K.Key_D):
            self.pan(-PAN_STEP if key == K.Key_A else PAN_STEP)
        elif plain and key == K.Key_F:
            self.zoom_to_selection()
        elif plain and key == K.Key_Z:
            self.zoom_to_ruler()
        elif not in_charts:
            return False
        elif plain and not shift and key in (K.Key_Left, K.Key_Right):
            self.pan(-PAN_STEP if key == K.Key_Left else PAN_STEP)
        elif plain and key == K.Key_Home:
            self.fit_all()
        elif plain and key == K.Key_Backspace:
            self.forward() if shift else self.back()
        elif alt and key in (K.Key_Left, K.Key_Right):
            self.back() if key == K.Key_Left else self.forward()
        elif plain and key == K.Key_Escape:
            return self._escape()
        else:
            return False
        event.accept()
        return True

    def _escape(self) -> bool:
        shown = [c for c in self._charts() if c.ruler_ns() is not None]
        for chart in shown:
            chart.clear_ruler()
        return bool(shown) or self.on_escape()

    # -- menu -------------------------------------------------------------------------------
    def add_actions(self, window: QWidget, menu: QMenu, fit_all: QAction) -> list[QAction]:
        """Add the zoom actions to ``menu`` (View) after ``fit_all`` (Ctrl+0), which becomes
        a user zoom (Zoom back returns from it).

        Their keys are handled by the event filter (so that they give way to text fields and
        the lane editor); the menu shows them after a tab.
        """
        fit_all.triggered.connect(self.fit_all)
        entries = [
            ("Zoom to &selection\tF", "Fit the selected ops", self.zoom_to_selection),
            ("Zoom to r&uler range\tZ", "Fit the range measured by Shift+drag", self.zoom_to_ruler),
            ("Zoom &back\tBackspace", "Return to the view before the last zoom", self.back),
            ("Zoom &forward\tShift+Backspace", "Redo a zoom undone by Zoom back", self.forward),
        ]
        actions = []
        for text, tip, slot in entries:
            action = QAction(text, window)
            action.setStatusTip(tip)
            action.triggered.connect(lambda _checked=False, s=slot: s())
            actions.append(action)
        back, forward = actions[2], actions[3]

        def update() -> None:
            back.setEnabled(self.history.can_go_back())
            forward.setEnabled(self.history.can_go_forward())

        self.history_changed.connect(update)
        update()
        insert_after(menu, fit_all, actions)
        return actions


def insert_after(menu: QMenu, anchor: QAction, actions: list[QAction]) -> None:
    """Put ``actions`` right after ``anchor`` in ``menu`` (at the end if it is not there)."""
    items = menu.actions()
    at = items.index(anchor) + 1 if anchor in items else len(items)
    if at < len(items):
        menu.insertActions(items[at], actions)
    else:
        menu.addActions(actions)
