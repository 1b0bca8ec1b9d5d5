"""The main window's result views: the simulated and measured charts with their summary strip
and prediction band, and the comparison table, insights and critical path under them.

They are the costly part of a window (pyqtgraph alone takes about as long to import as the
rest of the window to build), so the app builds them right after the window's first paint:
the frame, menus, toolbar and editor show first, with a placeholder in the Schedule dock.
Until the views exist, every action that needs them, or could open a document, is disabled
(ResultsGate); nothing that shows results is connected yet. ``MainWindow(defer_charts=False)``,
the default, builds them in its constructor.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSplitter, QTabWidget, QVBoxLayout, QWidget

from swimlanes.ui.window_layout import CHARTS_ESTIMATE_PX

#: What the Schedule dock shows until the charts exist.
PLACEHOLDER_TEXT = "Loading the charts..."
#: Actions that never need the result views or a document: usable from the first paint.
ALWAYS_READY = ("quit", "about", "guide", "shortcuts")


class ResultsGate:
    """Keeps ``actions`` and ``widgets`` disabled until ``open()``.

    The actions go into a disabled, non-exclusive QActionGroup: whatever enables or disables
    one of them meanwhile (a selection, the undo stack) is remembered by Qt and applies once
    the group is enabled. The widgets get their own enabled state back.
    """

    def __init__(self, parent: QWidget, actions: list[QAction], widgets: list[QWidget]) -> None:
        self._group = QActionGroup(parent)
        self._group.setExclusionPolicy(QActionGroup.ExclusionPolicy.None_)
        for action in actions:
            self._group.addAction(action)
        self._group.setEnabled(False)
        self._widgets = [(w, w.isEnabled()) for w in widgets]
        for widget, _was in self._widgets:
            widget.setEnabled(False)

    def is_open(self) -> bool:
        return self._group.isEnabled()

    def open(self) -> None:
        """Give every action and widget its own enabled state back (once)."""
        if self.is_open():
            return
        self._group.setEnabled(True)
        for action in self._group.actions():
            self._group.removeAction(action)
        for widget, was in self._widgets:
            widget.setEnabled(was)


def schedule_placeholder() -> QLabel:
    """The Schedule dock's content until the charts are built."""
    label = QLabel(PLACEHOLDER_TEXT)
    label.setObjectName("schedule_placeholder")
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setEnabled(False)  # drawn in the palette's disabled (grey) text colour
    # The first frame is painted before the window's first-start layout runs: holding the
    # charts' height here keeps the dock from jumping from a sliver to its size.
    label.setMinimumHeight(CHARTS_ESTIMATE_PX)
    return label


class ResultViews:
    """Mixin of MainWindow: builds and wires the result views (see the module docstring).

    MainWindow provides the controller, settings, actions, menus, toolbar, sim_runner,
    schedule_dock, the ``charts_ready`` signal and the slots connected here.
    """

    controller: Any
    settings: Any
    actions: Any
    menus: Any
    sim_runner: Any
    schedule_dock: Any
    charts_ready: Any
    results_gate: ResultsGate | None = None
    charts: Any = None
    summary: Any = None
    band: Any = None
    table: Any = None
    insights: Any = None
    critical: Any = None
    bottom_tabs: Any = None
    schedule_splitter: Any = None

    def has_charts(self) -> bool:
        """Whether the result views exist (they always do unless built after first paint)."""
        return self.charts is not None

    def gate_until_charts(self) -> None:
        """Disable what needs the result views (or opens a document) until they exist."""
        actions = [
            getattr(self.actions, name)
            for name in self.actions.__dataclass_fields__
            if name not in ALWAYS_READY
        ]
        m = self.menus
        submenus = [m.recent, m.examples, m.shipped_measurements]
        widgets = [self.toolbar.device, *submenus]  # type: ignore[attr-defined]
        self.results_gate = ResultsGate(self, actions, widgets)  # type: ignore[arg-type]

    def build_charts(self) -> None:
        """Build the result views, wire them, list the device presets, and enable what waited
        for them (once); then emit ``charts_ready``. Re-simulates a document edited before
        they existed."""
        if self.has_charts():
            return
        self._fill_devices()  # type: ignore[attr-defined]
        self._create_result_views()
        self._lay_out_result_views()
        self._connect_result_views()
        if self.results_gate is not None:
            self.results_gate.open()
            if getattr(self, "first_start", False):  # sized for the placeholder until now
                QTimer.singleShot(0, self, self._default_layout)  # type: ignore[attr-defined]
        self._on_selection_changed()  # type: ignore[attr-defined]
        if self.results_gate is not None and self.controller.pipeline.program:
            self.sim_runner.simulate_now()  # edits made while the charts were loading
        self.charts_ready.emit()

    def _create_result_views(self) -> None:
        # Here, not at the top: importing these (pyqtgraph above all) is what waits for the
        # first paint.
        from swimlanes.ui.comparison_table import ComparisonTable
        from swimlanes.ui.critical_path_panel import CriticalPathPanel
        from swimlanes.ui.gantt.side_by_side import ComparisonCharts
        from swimlanes.ui.gantt.summary import SummaryStrip
        from swimlanes.ui.insights_panel import InsightsPanel
        from swimlanes.ui.prediction_band import PredictionBand

        self.charts = ComparisonCharts()
        self.summary = SummaryStrip()
        self.band = PredictionBand(self.charts.simulated_chart, self)  # type: ignore[arg-type]
        self.table = ComparisonTable()
        self.insights = InsightsPanel()
        self.critical = CriticalPathPanel()

    def _lay_out_result_views(self) -> None:
        charts_box = QWidget()
        box = QVBoxLayout(charts_box)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        summary_row = QHBoxLayout()  # the band's line beside the strip: no extra height
        summary_row.addWidget(self.summary)
        # The line takes the width the strip leaves (up to its maximum) and the strip's height,
        # whatever rows the strip has now: it shows the fullest of its forms that fits there.
        summary_row.addWidget(self.band.label, 1)
        box.addLayout(summary_row)
        box.addWidget(self.charts, 1)
        self.bottom_tabs = QTabWidget()
        self.bottom_tabs.setObjectName("bottom_tabs")
        self.bottom_tabs.addTab(self.table, "Comparison table")
        self.bottom_tabs.addTab(self.insights, "Insights")
        self.bottom_tabs.addTab(self.critical, "Critical path")
        schedule = QSplitter(Qt.Orientation.Vertical)
        schedule.setObjectName("schedule_splitter")
        schedule.addWidget(charts_box)
        schedule.addWidget(self.bottom_tabs)
        schedule.setStretchFactor(0, 3)
        schedule.setStretchFactor(1, 1)
        placeholder = self.schedule_dock.widget()
        self.schedule_dock.setWidget(schedule)
        if placeholder is not None:
            placeholder.deleteLater()
        self.schedule_splitter = schedule

    def _connect_result_views(self) -> None:
        from swimlanes.ui.gantt.bars import KERNELS_BY_NAME_DEFAULT

        a, c = self.actions, self.controller
        # Ctrl+0 and the zoom, history and search actions of the charts, after it in View
        zooms = self.charts.navigation.add_actions(self, self.menus.view, a.fit_all)
        self.charts.search.add_actions(self, self.menus.view, zooms[-1])
        a.overlay.toggled.connect(self.charts.set_overlay_enabled)
        a.kernel_colours.toggled.connect(self._set_kernels_by_name)
        a.kernel_colours.setChecked(
            self.settings.q.value("view/kernels_by_name", KERNELS_BY_NAME_DEFAULT, type=bool)
        )
        c.selection_changed.connect(self._on_selection_changed)  # type: ignore[attr-defined]
        self.charts.selection_changed.connect(c.set_selection_indexes)
        self.table.selection_changed.connect(c.set_selection_indexes)
        self.insights.ops_selected.connect(c.set_selection_indexes)
        self.bottom_tabs.currentChanged.connect(lambda _i: self._refresh_insights())  # type: ignore[attr-defined]
        self.bottom_tabs.currentChanged.connect(lambda _i: self.refresh_critical_path())  # type: ignore[attr-defined]
        self.critical.ops_selected.connect(c.set_selection_indexes)
        c.replaced.connect(self._on_document_replaced)  # type: ignore[attr-defined]
        self.sim_runner.simulated.connect(self._on_simulated)  # type: ignore[attr-defined]
        self.sim_runner.failed.connect(self._on_simulation_failed)  # type: ignore[attr-defined]

    def _set_kernels_by_name(self, on: bool) -> None:
        """View > Colour kernels by name, in both charts (remembered)."""
        for chart in (self.charts.simulated_chart, self.charts.measured_chart):
            chart.set_kernels_by_name(on)
        self.settings.q.setValue("view/kernels_by_name", bool(on))

    def clear_band(self) -> None:
        """Remove the prediction band now (an edit, another device), if there is one yet."""
        if self.band is not None:
            self.band.clear()

    def shut_down_result_views(self) -> None:
        """Stop the result views' workers (the window is closing)."""
        if self.band is not None:
            self.band.shutdown()
        if self.critical is not None:
            self.critical.shutdown()
