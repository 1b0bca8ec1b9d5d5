"""The "Insights" tab: what the model says about the schedule and what to change.

A list of insights (swimlanes.analysis.insights.explain) with severity icons on the left, the
chosen one's explanation and advice on the right. Clicking an insight selects its ops
everywhere (``ops_selected(list)`` of program indexes).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QStyle,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

_SEVERITY_ORDER = {"problem": 0, "warning": 1, "info": 2}
_SEVERITY_ICON = {
    "problem": QStyle.StandardPixmap.SP_MessageBoxCritical,
    "warning": QStyle.StandardPixmap.SP_MessageBoxWarning,
    "info": QStyle.StandardPixmap.SP_MessageBoxInformation,
}
_INSIGHT_ROLE = Qt.ItemDataRole.UserRole


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3g} ms" if ns >= 1e5 else f"{ns / 1e3:.3g} us"


def insight_html(insight: Any) -> str:
    """The explanation of one insight as HTML (title, message, advice, saving, ops)."""
    parts = [f"<h3>{html.escape(insight.title)}</h3>", f"<p>{html.escape(insight.message)}</p>"]
    if getattr(insight, "advice", ""):
        parts.append(f"<p><b>What to change:</b> {html.escape(insight.advice)}</p>")
    saving = getattr(insight, "estimated_saving_ns", None)
    if saving:
        parts.append(f"<p><b>Estimated saving:</b> {_ms(saving)}</p>")
    ops = list(getattr(insight, "op_indexes", ()))
    if ops:
        shown = ", ".join(f"#{i}" for i in ops[:20]) + (" ..." if len(ops) > 20 else "")
        parts.append(f"<p><i>Ops: {shown} (selected in the editor and the charts)</i></p>")
    return "".join(parts)


class InsightsPanel(QWidget):
    """Severity-sorted insights; ``ops_selected(list)`` when one is clicked."""

    ops_selected = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.list = QListWidget(self)
        self.list.setAlternatingRowColors(True)
        self.list.itemClicked.connect(self._on_clicked)
        self.list.currentItemChanged.connect(self._show_details)
        self.details = QTextBrowser(self)
        self.details.setOpenLinks(False)
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(self.list)
        splitter.addWidget(self.details)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(splitter)
        self._insights: list[Any] = []
        self.set_insights([])

    def set_insights(self, insights: Sequence[Any], note: str = "") -> None:
        """Show ``insights`` (most severe first); ``note`` explains an empty list."""
        self._insights = sorted(insights, key=lambda i: _SEVERITY_ORDER.get(i.severity, 3))
        self.list.clear()
        for insight in self._insights:
            icon = _SEVERITY_ICON.get(insight.severity, QStyle.StandardPixmap.SP_MessageBoxQuestion)
            n = len(getattr(insight, "op_indexes", ()))
            suffix = f"  ({n} op{'s' if n != 1 else ''})" if n else ""
            item = QListWidgetItem(QIcon(self.style().standardIcon(icon)), insight.title + suffix)
            item.setToolTip(insight.message)
            item.setData(_INSIGHT_ROLE, insight)
            self.list.addItem(item)
        if self._insights:
            self.list.setCurrentRow(0)
        else:
            self.details.setHtml(
                f"<p>{html.escape(note or 'No insights: nothing in this schedule looks wrong.')}</p>"
            )

    def insights(self) -> list[Any]:
        return list(self._insights)

    def select_insight(self, row: int) -> None:
        """Select the insight in ``row`` as a click would (selects its ops)."""
        item = self.list.item(row)
        if item is not None:
            self.list.setCurrentItem(item)
            self._on_clicked(item)

    def _show_details(self, item: QListWidgetItem | None, _previous: Any = None) -> None:
        if item is not None:
            self.details.setHtml(insight_html(item.data(_INSIGHT_ROLE)))

    def _on_clicked(self, item: QListWidgetItem) -> None:
        insight = item.data(_INSIGHT_ROLE)
        self._show_details(item)
        self.ops_selected.emit([int(i) for i in getattr(insight, "op_indexes", ())])
