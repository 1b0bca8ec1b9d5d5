"""The main window: editor in the centre, simulated and measured charts below, docks around.

It owns the document controller and the long-running helpers (re-simulation, GPU runs in a
child process, autosave) and connects the views through the controller's shared selection.
File handling lives in dialogs.FileHandling, saving and exports in export_actions.ExportActions,
the device preset and GPU runs in device_controls.DeviceControls, the charts and the tables under
them in result_views.ResultViews (built after the first paint when the app starts).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QShowEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QProgressBar,
    QScrollArea,
    QSplitter,
    QWidget,
)

from swimlanes.ui import dialogs
from swimlanes.ui.actions import (
    build_menus,
    build_toolbar,
    create_actions,
)
from swimlanes.ui.autosave import Autosaver, discard_recovery, has_recovery, read_recovery
from swimlanes.ui.code_view import CodeDock, CodeView
from swimlanes.ui.device_controls import DeviceControls
from swimlanes.ui.dialogs import FileHandling
from swimlanes.ui.document_controller import DocumentController
from swimlanes.ui.editor import HostProgramPanel, Inspector, LaneEditor, OpPalette
from swimlanes.ui.editor.undo_keys import DocumentUndoKeys
from swimlanes.ui.export_actions import ExportActions
from swimlanes.ui.gpu_runner import GpuRunner
from swimlanes.ui.measurement_loading import LoadProgress, MeasurementLoading
from swimlanes.ui.result_views import ResultViews, schedule_placeholder
from swimlanes.ui.settings import Settings
from swimlanes.ui.simulation_results import SimulationResults
from swimlanes.ui.window_layout import CompareArrangement, default_layout, first_start_size
from swimlanes.ui.workers import SimulationRunner

if TYPE_CHECKING:  # numpy comes with it: not before the window's first paint
    from swimlanes.timeline.timeline import Timeline

#: Insights wait this long after a simulation, so editing never waits for them.
INSIGHTS_DELAY_MS = 300
PLAY_SECONDS = 5.0


class MainWindow(
    SimulationResults,
    FileHandling,
    ExportActions,
    MeasurementLoading,
    DeviceControls,
    ResultViews,
    QMainWindow,
):
    """Swimlanes' main window. ``gpu_available`` and ``gpu_runner`` can be injected (tests).

    ``defer_charts``: leave the charts and the tables under them to ``build_charts()``
    (the app calls it right after the first paint); until then a placeholder stands in the
    Schedule dock and what needs them is disabled. Signal ``charts_ready()`` once they exist.
    """

    charts_ready = Signal()

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        gpu_available: bool | None = None,
        gpu_runner: GpuRunner | None = None,
        autosave_path: Path | None = None,
        defer_charts: bool = False,
    ) -> None:
        super().__init__()
        self.setObjectName("main_window")
        self.settings = settings or Settings()
        self.controller = DocumentController(parent=self)
        # Connected before the simulation runner's own slot: an edit removes the band first,
        # and a synchronous re-simulation then starts the new one.
        self.controller.changed.connect(self.clear_band)
        self.sim_runner = SimulationRunner(
            self.controller, self.settings.last_device(), parent=self
        )
        self.gpu_runner = gpu_runner or GpuRunner(self)
        self.gpu_runner.setParent(self)
        self.autosaver = Autosaver(self.controller, path=autosave_path, parent=self)
        self.simulated: Timeline | None = None
        #: Why there is no current simulated schedule ("" when there is one).
        self.simulation_problem = ""
        self.measured: Timeline | None = None
        self.measured_pipeline: Any = None
        self.comparison: Any = None
        self.devices_dialog: Any = None
        self._insights_stale = True
        self._play_timer = QTimer(self)
        self._play_timer.setInterval(33)
        self._play_timer.timeout.connect(self._play_step)
        self._play_started = 0.0
        self._device_index = 0
        self._insights_timer = QTimer(self)
        self._insights_timer.setSingleShot(True)
        self._insights_timer.setInterval(INSIGHTS_DELAY_MS)
        self._insights_timer.timeout.connect(self._refresh_insights)
        self._build_widgets()
        self._build_actions()
        self.arrangement = CompareArrangement(self, self.actions.compare_layout)
        self._connect()
        self._init_gpu(gpu_available)
        if defer_charts:
            self.gate_until_charts()
        else:
            self.build_charts()
        self._restore_layout()
        self.update_title()

    # -- construction -------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        c = self.controller
        self.palette_widget = OpPalette(c)
        self.lanes = LaneEditor(c)
        self.program_panel = HostProgramPanel(c)
        self.inspector = Inspector(c)
        self.inspector.preset_source = self
        self.code_view = CodeView(c)

        editor = QSplitter(Qt.Orientation.Vertical)
        editor.setObjectName("editor_splitter")
        editor.addWidget(self.lanes)
        editor.addWidget(self.program_panel)
        editor.setStretchFactor(0, 3)
        editor.setStretchFactor(1, 1)
        self.setCentralWidget(editor)

        self._add_dock(
            "Operations", "palette_dock", self.palette_widget, Qt.DockWidgetArea.LeftDockWidgetArea
        )
        # In a scroll area: the inspector's form must not set the height of the whole window.
        inspector_scroll = QScrollArea()
        inspector_scroll.setWidget(self.inspector)
        inspector_scroll.setWidgetResizable(True)
        inspector_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        bar = inspector_scroll.verticalScrollBar().sizeHint().width()
        inspector_scroll.setMinimumWidth(self.inspector.minimumSizeHint().width() + bar)
        inspector_dock = self._add_dock(
            "Inspector", "inspector_dock", inspector_scroll, Qt.DockWidgetArea.RightDockWidgetArea
        )
        self._add_code_dock(inspector_dock)

        # The charts and the tables under them replace the placeholder (build_charts).
        self.schedule_dock = self._add_dock(
            "Schedule",
            "schedule_dock",
            schedule_placeholder(),
            Qt.DockWidgetArea.BottomDockWidgetArea,
        )

        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(220)
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setFormat("GPU run %p%")
        self.progress_bar.hide()
        # Large pipelines simulate in a worker: show that something is happening.
        self.sim_progress = LoadProgress(name="sim_progress")
        self.statusBar().addPermanentWidget(self.sim_progress)
        self.timing_label = QLabel()
        # Shown while the recovery copy cannot be written: edits are then not crash-safe.
        self.autosave_warning = QLabel()
        self.autosave_warning.setObjectName("autosave_warning")
        self.autosave_warning.setStyleSheet("color: #D55E00; font-weight: bold;")
        self.autosave_warning.hide()
        self.statusBar().addPermanentWidget(self.autosave_warning)
        # Shown while the measurement is compared with a preset of another host.
        self.preset_warning = QLabel()
        self.preset_warning.setObjectName("preset_warning")
        self.preset_warning.setStyleSheet("color: #D55E00; font-weight: bold;")
        self.preset_warning.hide()
        self.statusBar().addPermanentWidget(self.preset_warning)
        self.statusBar().addPermanentWidget(self.progress_bar)
        self.statusBar().addPermanentWidget(self.timing_label)
        self.init_measurement_loading(self.statusBar())

    def _add_dock(
        self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea
    ) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.addDockWidget(area, dock)
        return dock

    def _add_code_dock(self, inspector_dock: QDockWidget) -> None:
        # Beside the lanes, between them and the inspector; hidden until View > Code shows
        # it, so that the editor keeps its width on first start.
        self.code_dock = CodeDock(self.code_view, self)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.code_dock)
        self.splitDockWidget(self.code_dock, inspector_dock, Qt.Orientation.Horizontal)
        self.code_dock.hide()

    def _build_actions(self) -> None:
        self.actions = create_actions(self, self.controller.undo_stack)
        self.menus = build_menus(self, self.actions)
        for dock in self.findChildren(QDockWidget):
            self.menus.view.addAction(dock.toggleViewAction())
        self.toolbar = build_toolbar(self, self.actions)
        self._show_device_until_listed()  # the list follows with the charts (build_charts)
        self.toolbar.repeat.setValue(self.settings.gpu_repeat())
        self.fill_examples_menu()
        self.fill_recent_menu()

    def _connect(self) -> None:
        a, c = self.actions, self.controller
        self.connect_file_actions()
        a.delete.triggered.connect(self.lanes.delete_selection)
        a.duplicate.triggered.connect(self.lanes.duplicate_selection)
        a.copy.triggered.connect(self.lanes.copy_selection)
        a.paste.triggered.connect(self.lanes.paste)
        a.select_all.triggered.connect(
            lambda: c.set_selection([op.uid for op in c.pipeline.program])
        )
        self.undo_keys = DocumentUndoKeys(self, [a.undo, a.redo])
        a.devices.triggered.connect(self.show_devices_dialog)
        a.simulate.triggered.connect(self.sim_runner.simulate_now)
        a.play.toggled.connect(self.set_playing)
        a.run_gpu.triggered.connect(self.run_on_gpu)
        a.cancel_gpu.triggered.connect(self.gpu_runner.cancel)
        a.about.triggered.connect(lambda: dialogs.about(self))
        self.code_view.set_language(self.settings.code_language())
        self.code_view.language_combo.currentIndexChanged.connect(
            lambda _i: self.settings.set_code_language(self.code_view.language())
        )
        self.code_view.save_requested.connect(self.export_code)
        self.code_view.message.connect(lambda text: self.statusBar().showMessage(text, 8000))
        a.lesson.triggered.connect(self.show_lesson)
        a.guide.triggered.connect(lambda: self.show_guide())
        a.shortcuts.triggered.connect(self.show_shortcuts)
        self.toolbar.device.currentIndexChanged.connect(lambda _i: self.clear_band())
        self.toolbar.device.currentIndexChanged.connect(self._on_device_changed)
        self.toolbar.repeat.valueChanged.connect(self.settings.set_gpu_repeat)

        c.path_changed.connect(self.update_title)
        c.changed.connect(self.update_title)
        c.changed.connect(self._update_edit_actions)
        c.error.connect(lambda msg: self.statusBar().showMessage(f"Not done: {msg}", 8000))
        # the result views' own connections: ResultViews._connect_result_views

        self.autosaver.failed.connect(self._on_autosave_failed)
        self.autosaver.saved.connect(lambda _path: self.autosave_warning.hide())
        self.sim_runner.busy_changed.connect(self._on_simulation_busy)
        self.sim_runner.progress.connect(self.sim_progress.set_fraction)
        self.sim_progress.cancel_button.clicked.connect(self.sim_runner.cancel)
        g = self.gpu_runner
        g.running_changed.connect(self._on_gpu_running)
        g.progress.connect(lambda f: self.progress_bar.setValue(int(1000 * f)))
        g.partial.connect(self._on_gpu_partial)
        g.calibrating.connect(self._on_gpu_calibrating)
        g.calibrated.connect(self._on_gpu_calibrated)
        g.finished.connect(self._on_gpu_finished)
        g.failed.connect(self._on_gpu_failed)
        g.cancelled.connect(lambda: self.statusBar().showMessage("GPU run cancelled", 8000))

    def set_measured(self, timeline: Timeline | None, pipeline: Any = None) -> None:
        """Show a measured timeline beside the simulation (None hides it)."""
        self.build_charts()  # shown in them: called before they exist, they are built now
        self.measured = timeline
        self.measured_pipeline = pipeline
        self._simulate_like(timeline)
        self.charts.set_measured(timeline)
        self.actions.save_measurement.setEnabled(timeline is not None)
        self.refresh_results()
        # Both charts must show whole as soon as there is something to compare.
        self.arrangement.set_compare(timeline is not None, refit=True)

    def _simulate_like(self, measured: Timeline | None) -> None:
        """Simulate on the preset of the host a measurement came from, so the two compare
        (DeviceControls.use_measured_host_preset)."""
        self.use_measured_host_preset(measured)

    def show_devices_dialog(self) -> Any:  # noqa: ANN401 - a DevicesDialog, imported on use
        """Pipeline > Devices and communicators (one dialog, not modal: edits show live)."""
        from swimlanes.ui.device_dialog import DevicesDialog

        if self.devices_dialog is None:
            self.devices_dialog = DevicesDialog(self.controller, self)
        self.devices_dialog.refresh()
        self.devices_dialog.show()
        self.devices_dialog.raise_()
        return self.devices_dialog

    # -- selection ----------------------------------------------------------------------------
    def _on_selection_changed(self) -> None:
        indexes = self.controller.selected_indexes()
        self.charts.set_selection(indexes)
        self.table.set_selection(indexes)
        self._update_edit_actions()

    def _update_edit_actions(self) -> None:
        has = bool(self.controller.selection())
        for action in (self.actions.delete, self.actions.duplicate, self.actions.copy):
            action.setEnabled(has)

    # -- play ---------------------------------------------------------------------------------
    def set_playing(self, on: bool) -> None:
        """Animate a cursor from the start to the end of the simulated schedule."""
        if on and self.simulated is not None and self.simulated.makespan_ns > 0:
            self._play_started = time.monotonic()
            self._play_timer.start()
            self.actions.play.setText("&Pause")
            self.actions.play.setIcon(
                self.style().standardIcon(self.style().StandardPixmap.SP_MediaPause)
            )
            return
        self._play_timer.stop()
        self.actions.play.setText("&Play")
        self.actions.play.setIcon(
            self.style().standardIcon(self.style().StandardPixmap.SP_MediaPlay)
        )
        if self.actions.play.isChecked():
            self.actions.play.setChecked(False)

    def _play_step(self) -> None:
        sim = self.simulated
        if sim is None:
            self.set_playing(False)
            return
        fraction = (time.monotonic() - self._play_started) / PLAY_SECONDS
        if fraction >= 1.0:
            self.charts.set_cursor(None)
            self.set_playing(False)
            return
        self.charts.set_cursor(int(fraction * sim.makespan_ns))

    # -- window state -------------------------------------------------------------------------
    def update_title(self) -> None:
        self.setWindowTitle(f"{self.controller.title} — Swimlanes")

    def _restore_layout(self) -> None:
        geometry, state = self.settings.window_geometry(), self.settings.window_state()
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(first_start_size(self.screen().availableGeometry().size()))
        self.first_start = state is None
        if state is not None:
            self.restoreState(state)
        else:
            # Sizes only take once the window is laid out on screen.
            QTimer.singleShot(0, self._default_layout)

    def _default_layout(self) -> None:
        default_layout(self)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.arrangement.arrange_soon()  # a switch made before the window was laid out

    def offer_recovery(self) -> bool:
        """If an earlier session left unsaved work, offer to restore it; True if restored."""
        path = self.autosaver.path
        if not has_recovery(path):
            return False
        try:
            pipeline, original, saved_at = read_recovery(path)
        except ValueError:
            discard_recovery(path)
            return False
        if not dialogs.ask_restore_recovery(self, saved_at, original):
            discard_recovery(path)
            return False
        self.use_document_device(pipeline)  # the device chosen before the crash
        self.controller.set_pipeline(pipeline, original)
        self.controller.undo_stack.resetClean()  # restored work is unsaved until saved
        self.update_title()
        self.sim_runner.simulate_now()
        self.statusBar().showMessage("Restored the unsaved document from the last session", 10000)
        return True

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        if not self.maybe_save():
            event.ignore()
            return
        self.set_playing(False)
        self.gpu_runner.wait_stopped()
        self.measurement_task.shutdown()
        self.sim_runner.shutdown()
        self.shut_down_result_views()
        self.autosaver.stop()
        self.autosaver.discard()
        self.arrangement.editing_arrangement_now()
        self.settings.save_window(self.saveGeometry(), self.saveState())
        self.settings.sync()
        event.accept()
