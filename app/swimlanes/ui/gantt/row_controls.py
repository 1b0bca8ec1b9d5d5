"""Collapsing row groups and pinning rows: the shared state and the row-title context menu.

The simulated and the measured chart hold one :class:`RowGroupState` between them, so a group
collapsed or a row pinned in one chart is so in the other, and both keep the same rows.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QPoint, Signal
from PySide6.QtWidgets import QMenu, QWidget

from swimlanes.ui.gantt.device_rows import row_devices
from swimlanes.ui.gantt.row_groups import RowArrangement, RowGrouping, arrange_rows, is_summary
from swimlanes.ui.gantt.rows import timeline_row_keys


class RowGroupState(QObject):
    """Collapsed groups and pinned rows; ``changed`` fires after each change."""

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.grouping = RowGrouping()

    def toggle(self, group: str) -> None:
        """Collapse or expand a group ("host", "streams", "engines"; "device:NAME" or "links"
        on a multi-device chart)."""
        self.grouping.toggle(group)
        self.changed.emit()

    def set_collapsed(self, group: str, on: bool) -> None:
        if (group in self.grouping.collapsed) != on:
            self.toggle(group)

    def pin(self, key: str, on: bool = True) -> None:
        """Keep a row at the top of the chart, or put it back in its group."""
        before = list(self.grouping.pinned)
        self.grouping.pin(key, on)
        if self.grouping.pinned != before:
            self.changed.emit()

    def reset(self) -> None:
        """Every group expanded, no row pinned."""
        if self.grouping.collapsed or self.grouping.pinned:
            self.grouping = RowGrouping()
            self.changed.emit()


def row_context_menu(
    parent: QWidget, arrangement: RowArrangement, row: int, state: RowGroupState
) -> QMenu:
    """The menu of a row title: collapse or expand its group, pin or unpin the row."""
    menu = QMenu(parent)
    span = arrangement.span_at(row)
    key = arrangement.keys[row] if 0 <= row < len(arrangement.keys) else None
    if span is not None and span.group != "pinned" and span.members > 1:
        word = "Expand" if span.collapsed else "Collapse"
        menu.addAction(
            f"{word} {span.title.lower()}", lambda g=span.group: state.toggle(g)
        ).setObjectName("toggle_group")
    if key is not None and not is_summary(key):
        if key in state.grouping.pinned:
            menu.addAction("Unpin row", lambda: state.pin(key, False)).setObjectName("unpin")
        else:
            menu.addAction("Pin row to top", lambda: state.pin(key, True)).setObjectName("pin")
    if state.grouping.collapsed or state.grouping.pinned:
        menu.addSeparator()
        menu.addAction("Expand all, unpin all", state.reset).setObjectName("reset")
    return menu


class RowGroupsMixin:
    """The row-group behaviour of a Gantt chart (mixed into ``GanttChart``).

    Expects ``_timeline``, ``_layout_rows``, ``_row_axis`` and ``_relayout(fit)`` from the chart.
    """

    _row_state: RowGroupState
    row_arrangement: RowArrangement
    #: Row key -> device of the forced layout's rows (see ``set_row_devices``).
    _layout_devices: dict[str, str] = {}

    def _init_row_groups(self) -> None:
        self._row_state = RowGroupState(self)  # type: ignore[arg-type]
        self._row_state.changed.connect(self._on_row_groups_changed)
        self.row_arrangement = arrange_rows([])
        self._row_axis.group_clicked.connect(self._on_group_clicked)
        self._row_axis.menu_requested.connect(self._on_row_menu)

    def _arrange_rows(self) -> RowArrangement:
        """The rows to show: the forced layout, then the timeline's own, grouped."""
        keys = list(self._layout_rows or [])
        if self._timeline is not None:
            keys += [k for k in timeline_row_keys(self._timeline)[0] if k not in keys]
        # several devices: one group per device (the layout's rows keep the devices of the
        # timeline they came from, which a chart shown beside this one passes on)
        devices = {**self._layout_devices, **row_devices(self._timeline)}
        self.row_arrangement = arrange_rows(keys, self._row_state.grouping, devices)
        return self.row_arrangement

    def row_group_state(self) -> RowGroupState:
        """The collapsed groups and pinned rows this chart shows (maybe shared)."""
        return self._row_state

    def share_row_groups_with(self, other: RowGroupsMixin) -> None:
        """Use ``other``'s collapsed groups and pinned rows, now and after every change (the
        charts of a comparison keep the same rows in the same order)."""
        self._row_state.changed.disconnect(self._on_row_groups_changed)
        self._row_state = other.row_group_state()
        self._row_state.changed.connect(self._on_row_groups_changed)
        self._on_row_groups_changed()

    def set_group_collapsed(self, group: str, on: bool) -> None:
        """Collapse a group ("host", "streams", "engines"; "device:NAME" or "links" on a
        multi-device chart) into one summary row, or expand it."""
        self._row_state.set_collapsed(group, on)

    def pin_row(self, key: str, on: bool = True) -> None:
        """Keep the row ``key`` at the top (``on``) or put it back in its group."""
        self._row_state.pin(key, on)

    def _on_row_groups_changed(self) -> None:
        self._relayout(fit=False)

    def _on_group_clicked(self, row: int) -> None:
        span = self.row_arrangement.span_at(row)
        if span is not None and span.group != "pinned" and span.members > 1:
            self._row_state.toggle(span.group)

    def _on_row_menu(self, row: int, x: int, y: int) -> None:
        menu = row_context_menu(self, self.row_arrangement, row, self._row_state)  # type: ignore[arg-type]
        if not menu.isEmpty():
            menu.popup(QPoint(x, y))
        self._last_row_menu = menu  # kept alive while shown (and for tests)
