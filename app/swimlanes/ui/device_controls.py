"""The main window's device controls: the device preset the simulation uses (toolbar list,
preset files), and runs on the GPU in a child process with live partial results."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QLabel

from swimlanes.model.document import Pipeline
from swimlanes.model.edits import Edit
from swimlanes.ui import dialogs
from swimlanes.ui.actions import CHOOSE_PRESET_FILE, add_device_item, fill_device_combo

if TYPE_CHECKING:  # numpy comes with it: not before the window's first paint
    from swimlanes.engine.presets import DevicePreset
    from swimlanes.timeline.timeline import Timeline

CALIBRATING_FORMAT = "Calibrating this GPU %p%"
CALIBRATING_MESSAGE = (
    "First GPU run on this host: calibrating it quickly (once per host, under 20 s; "
    "Cancel GPU run stops it), then running..."
)
NO_GPU_REASON = (
    "No CUDA GPU was found on this machine, so Run on GPU is off. Simulation still works, and "
    "File > Open measurement shows a measured run (the examples ship one each)."
)


#: The pipeline file's key for the device preset it is meant for (docs/file-format.md).
DEVICE_KEY = "device"


class SetDevice(Edit):
    """Choose the document's device preset (its ``device`` key): an undoable edit, so that
    the choice is saved with the file, marks it unsaved, and undo puts the list back.

    ``show(device)`` makes the device list and the simulation follow on undo and redo.
    """

    def __init__(self, device: str, shown_before: str, show: Callable[[str], object]) -> None:
        super().__init__()
        self.device = device
        self.shown_before = shown_before
        self._before: str | None = None
        self._show = weakref.WeakMethod(show) if hasattr(show, "__self__") else lambda: show
        self._text = f"Simulate on {device}"

    def _do(self, pipeline: Pipeline) -> None:
        self._before = pipeline.extra.get(DEVICE_KEY)
        pipeline.extra[DEVICE_KEY] = self.device
        self._follow(self.device)

    def _undo(self, pipeline: Pipeline) -> None:
        if self._before is None:
            pipeline.extra.pop(DEVICE_KEY, None)
        else:
            pipeline.extra[DEVICE_KEY] = self._before
        self._follow(self.shown_before)

    def _touched(self) -> list:
        return []  # no op changes: nothing to validate

    def _follow(self, device: str) -> None:
        show = self._show()
        if show is not None:
            show(device)


class DeviceControls:
    """Mixin of MainWindow (which provides toolbar, actions, sim_runner, gpu_runner, settings, inspector,
    charts, arrangement, controller, progress_bar, set_measured and the measured state)."""

    def _init_gpu(self, available: bool | None) -> None:
        if available is None:
            from swimlanes.gpu import cuda_available

            available = cuda_available()
        self.gpu_available = available
        a = self.actions
        a.cancel_gpu.setEnabled(False)
        a.run_gpu.setEnabled(available)
        self.toolbar.repeat.setEnabled(available)
        if not available:
            a.run_gpu.setToolTip(NO_GPU_REASON)
            a.run_gpu.setStatusTip(NO_GPU_REASON)
            self.statusBar().showMessage(NO_GPU_REASON, 15000)
            # The message above scrolls away; this note stays, with the reason on hover.
            note = QLabel("No CUDA GPU: simulation only")
            note.setObjectName("no_gpu_note")
            note.setToolTip(NO_GPU_REASON)
            self.statusBar().addPermanentWidget(note)

    def _show_device_until_listed(self) -> None:
        """The device list holds only the current device until ``_fill_devices``: listing the
        presets loads the engine (and numpy), which waits for the window's first paint."""
        device = str(self.sim_runner.device)
        text = f"{Path(device).stem} (file)" if device.endswith(".json") else device
        combo = self.toolbar.device
        combo.blockSignals(True)
        combo.clear()
        combo.addItem(text, device)
        combo.blockSignals(False)

    def _fill_devices(self) -> None:
        combo = self.toolbar.device
        combo.blockSignals(True)
        combo.clear()
        fill_device_combo(combo)
        if not self._select_device(str(self.sim_runner.device)):
            self._select_device("h200" if combo.findText("h200") >= 0 else combo.itemText(0))
        combo.blockSignals(False)

    # -- device -------------------------------------------------------------------------------
    def device_name(self) -> str:
        return self.toolbar.device.currentText()

    def _select_device(self, device: str) -> bool:
        """Show ``device`` (a preset name, or a preset file that is then listed) as current."""
        from swimlanes.engine import get_preset

        combo = self.toolbar.device
        i = combo.findData(device)
        if i < 0 and device.endswith(".json") and Path(device).is_file():
            i = add_device_item(combo, f"{Path(device).stem} (file)", device, get_preset)
        if i < 0:
            return False
        combo.setCurrentIndex(i)
        combo.setToolTip(str(combo.itemData(i, Qt.ItemDataRole.ToolTipRole)))
        self.sim_runner.device = device
        self._device_index = i
        self.inspector.refresh()  # (its empty time fields show this preset's figures)
        return True

    def document_preset(self) -> DevicePreset | None:
        """The device preset the simulation uses (loaded once per device; None when it cannot
        be loaded: the simulation then says why)."""
        from swimlanes.engine import get_preset

        device = str(self.sim_runner.device)
        cached = getattr(self, "_preset_cache", None)
        if cached is None or cached[0] != device:
            try:
                cached = (device, get_preset(device))
            except (ValueError, OSError):
                cached = (device, None)
            self._preset_cache = cached
        return cached[1]

    def set_device(self, name: str, *, simulate: bool = True) -> bool:
        """Use this device preset (re-simulating unless told not to) without remembering it as
        the user's choice, as opening a document that names its device does; False if there is
        no preset by that name."""
        combo = self.toolbar.device
        combo.blockSignals(True)
        try:
            found = self._select_device(name)
        finally:
            combo.blockSignals(False)
        if found and simulate:
            self.sim_runner.set_device(name)
        return found

    def _on_device_changed(self, index: int) -> None:
        combo = self.toolbar.device
        device = str(combo.itemData(index))
        if device == CHOOSE_PRESET_FILE:
            device = self._choose_preset_file() or ""
            if not device or not self.set_device(device, simulate=False):
                self.set_device(str(combo.itemData(self._device_index)), simulate=False)
                return
        else:
            combo.setToolTip(str(combo.itemData(index, Qt.ItemDataRole.ToolTipRole)))
            self._device_index = index
        self.settings.set_last_device(device)
        shown_before = str(self.sim_runner.device)
        self.sim_runner.set_device(device)
        self.inspector.refresh()
        if self.controller.pipeline.extra.get(DEVICE_KEY) != device:
            # the document remembers the choice (saved in its file, and in the recovery copy)
            self.controller.push(SetDevice(device, shown_before, self._show_document_device))

    def _show_document_device(self, device: str) -> None:
        """Undo or redo of a device choice: the list and the simulation follow."""
        if device != str(self.sim_runner.device):
            self.set_device(device)

    def use_document_device(self, pipeline: Pipeline, *, simulate: bool = False) -> None:
        """Simulate on the device a document names (opened or recovered), if it names one."""
        device = pipeline.extra.get(DEVICE_KEY)
        if isinstance(device, str) and device:
            self.set_device(device, simulate=simulate)

    def _choose_preset_file(self) -> str | None:
        from swimlanes.engine import get_preset
        from swimlanes.resources import presets_dir

        path = dialogs.open_file(self, "Device preset", str(presets_dir()), dialogs.PRESET_FILTER)
        if not path:
            return None
        try:
            get_preset(path)
        except (ValueError, OSError) as err:
            dialogs.show_error(self, "Cannot use this preset", f"{Path(path).name}: {err}")
            return None
        return path

    # -- GPU ----------------------------------------------------------------------------------
    def run_on_gpu(self) -> None:
        if not self.gpu_available:
            dialogs.show_error(self, "Run on GPU", NO_GPU_REASON)
            return
        pipeline = self.controller.pipeline.copy()
        self.set_measured(None)
        self.measured_pipeline = pipeline
        self.gpu_runner.start(pipeline, repeat=self.toolbar.repeat.value())
        self.statusBar().showMessage(f"Running {len(pipeline.program)} ops on the GPU...")

    def _on_gpu_running(self, running: bool) -> None:
        self.actions.run_gpu.setEnabled(self.gpu_available and not running)
        self.actions.cancel_gpu.setEnabled(running)
        self.progress_bar.setFormat("GPU run %p%")
        self.progress_bar.setValue(0)
        self.progress_bar.setVisible(running)

    def _on_gpu_calibrating(self, fraction: float) -> None:
        bar = self.progress_bar
        if bar.format() != CALIBRATING_FORMAT:  # the first message: say why the run waits
            bar.setFormat(CALIBRATING_FORMAT)
            self.statusBar().showMessage(CALIBRATING_MESSAGE)
        bar.setValue(int(1000 * fraction))

    def _on_gpu_calibrated(self, message: dict) -> None:
        self.progress_bar.setFormat("GPU run %p%")
        self.progress_bar.setValue(0)
        if message.get("problem"):
            self.statusBar().showMessage(f"{message['problem']}; running anyway...", 15000)
        elif message.get("new"):
            path = Path(str(message.get("preset", {}).get("path", "")))
            self.statusBar().showMessage(
                f"Calibrated this host (cached as {path.name}); running on the GPU..."
            )

    # -- the measured host's preset -----------------------------------------------------------
    def use_measured_host_preset(self, measured: Timeline | None) -> None:
        """Simulate beside ``measured`` on the calibration of the host it came from
        (swimlanes.gpu.preset_choice); the preset warning shows, with the reason on hover,
        when only another host's preset or a shipped one is at hand."""
        from swimlanes.gpu.preset_choice import choose_preset

        label = self.preset_warning
        if measured is None:
            self._preset_notes: list[str] = []
            label.hide()
            return
        choice, problems = choose_preset(measured)
        warning = choice.warning
        device = choice.device
        if not choice.same_gpu:  # no preset of that GPU at all: keep the user's choice
            device = str(self.sim_runner.device)
            warning = (
                f"no calibrated or shipped preset of {measured.device or 'the measured GPU'}: "
                f"simulating on {self.device_name()}"
            )
        if device != self.sim_runner.device and self.set_device(device):
            self.statusBar().showMessage(
                f"Simulating on {self.device_name()}: {choice.origin}", 10000
            )
        self.toolbar.device.setToolTip(f"{self.device_name()}: {choice.origin}")
        notes = [w for w in (warning, *problems) if w]
        label.setText("Preset is not the measured host's" if warning else "Preset cache problem")
        label.setToolTip("\n".join(notes))
        self._preset_notes = notes
        # Shown one event-loop turn later: a status-bar widget appearing while the compare
        # layout is arranged (queued the same way) upsets the dock heights that layout sets.
        QTimer.singleShot(0, label, lambda: label.setVisible(bool(self._preset_notes)))

    def _on_gpu_partial(self, timeline: Timeline) -> None:
        first = self.measured is None
        self.measured = timeline
        self.charts.set_measured(timeline)
        if first:  # the measured chart fills in live: make room for it once
            self.arrangement.set_compare(True, refit=True)

    def _on_gpu_finished(self, timeline: Timeline) -> None:
        from swimlanes.ui.gantt.rows import format_duration

        self.set_measured(timeline, self.measured_pipeline)
        text = f"Measured {len(timeline)} ops on {timeline.device}: makespan {format_duration(timeline.makespan_ns)}"
        if self.comparison is not None:
            text += f" (model error {100 * self.comparison.makespan_error:+.1f}%)"
        self.statusBar().showMessage(text, 15000)

    def _on_gpu_failed(self, message: str) -> None:
        self.statusBar().showMessage(message.splitlines()[0], 15000)
        dialogs.show_error(self, "GPU run", message)
