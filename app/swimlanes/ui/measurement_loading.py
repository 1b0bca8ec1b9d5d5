"""Opening a measured run or a profiler trace without blocking the window.

A profiler trace can hold millions of events and take seconds to parse, so the loader (a plain
function with progress and cancel callbacks, swimlanes.timeline.formats.io.load_timeline_any) runs in a
worker thread (workers.TaskRunner). Meanwhile the status bar shows its progress with a Cancel
button, and the window stays usable; the result is shown on the UI thread as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QProgressBar,
    QStatusBar,
    QStyle,
    QToolButton,
    QWidget,
)

from swimlanes.ui import dialogs
from swimlanes.ui.workers import TaskRunner


class LoadProgress(QWidget):
    """Status-bar progress of long work (a file being loaded, a large simulation), with a
    Cancel button; hidden when idle."""

    def __init__(self, parent: QWidget | None = None, name: str = "load_progress") -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setMaximumWidth(260)
        self.cancel_button = QToolButton()
        self.cancel_button.setObjectName(f"cancel_{name}_button".replace("_progress", ""))
        self.cancel_button.setText("Cancel")
        self.cancel_button.setAutoRaise(True)
        self.cancel_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_BrowserStop))
        self.cancel_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel_button)
        self.hide()

    def begin(self, name: str, doing: str = "Loading") -> None:
        """Show ``doing name`` and 0 %; the Cancel button's tooltip says what it stops."""
        # %p is the only placeholder QProgressBar knows: a % in the file name must stay text.
        self.bar.setFormat(f"{doing} {name.replace('%', '%%')} %p%")
        self.cancel_button.setToolTip(f"Stop {doing.lower()} {name}")
        self.bar.setValue(0)
        self.show()

    def set_fraction(self, fraction: float) -> None:
        self.bar.setValue(int(1000 * fraction))


class MeasurementLoading:
    """File > Open measurement, mixed into MainWindow (which provides the attributes used)."""

    controller: Any
    charts: Any
    measurement_task: TaskRunner
    load_progress: LoadProgress
    _loading_path: str | None = None
    status: Any  # FileHandling.status

    def init_measurement_loading(self, status_bar: QStatusBar) -> None:
        """Create the worker and its status-bar progress (call once, from the window)."""
        self.measurement_task = TaskRunner(self)  # type: ignore[arg-type]
        self.load_progress = LoadProgress()
        status_bar.addPermanentWidget(self.load_progress)
        task = self.measurement_task
        task.progress.connect(self.load_progress.set_fraction)
        task.busy_changed.connect(lambda busy: self.load_progress.setVisible(busy))
        task.finished.connect(self._on_measurement_loaded)
        task.failed.connect(self._on_measurement_failed)
        self.load_progress.cancel_button.clicked.connect(self.cancel_measurement_load)

    def open_measurement(self, path: str | None = None) -> bool:
        """Start loading a measured run or a profiler trace (asks for one when ``path`` is
        None); it shows beside the simulation once loaded. A load already running is dropped
        for this one. False if nothing was started."""
        from swimlanes.resources import measurements_dir

        path = path or dialogs.open_file(
            self,  # type: ignore[arg-type]
            "Open measurement",
            str(measurements_dir()),
            dialogs.MEASUREMENT_FILTER,
        )
        if not path:
            return False
        self._loading_path = path
        name = Path(path).name
        self.load_progress.begin(name)
        self.measurement_task.start(_loader(path))
        self.status("")  # the progress bar names the file
        return True

    def open_trace_as_pipeline(self, path: str | None = None) -> bool:
        """Rebuild a trace or run as a pipeline (swimlanes.timeline.reconstruct) and open it
        as the document with the measurement beside it; False if nothing was started."""
        from swimlanes.resources import measurements_dir

        path = path or dialogs.open_file(
            self,  # type: ignore[arg-type]
            "Open trace as pipeline",
            str(measurements_dir()),
            dialogs.MEASUREMENT_FILTER,
        )
        if not path:
            return False
        self._loading_path = path
        self._rebuilding = True
        self.load_progress.begin(Path(path).name, "Rebuilding")
        self.measurement_task.start(_rebuilder(path))
        self.status("")
        return True

    def is_loading_measurement(self) -> bool:
        return self.measurement_task.is_busy()

    def cancel_measurement_load(self) -> bool:
        """Stop the load in progress; False if there was none."""
        if not self.measurement_task.cancel():
            return False
        self.status(f"Stopped loading {Path(self._loading_path or '').name}")
        return True

    def _on_measurement_loaded(self, result: tuple[Any, Any]) -> None:
        timeline, pipeline = result
        name = Path(self._loading_path or "").name
        rebuilt, self._rebuilding = getattr(self, "_rebuilding", False), False
        if pipeline is not None and (rebuilt or self._should_adopt(pipeline, name)):
            if not self.maybe_save():  # type: ignore[attr-defined]
                return
            self._replace_document(pipeline, None, None)  # type: ignore[attr-defined]
        self.set_measured(timeline, pipeline)  # type: ignore[attr-defined]
        self.charts.fit_all()
        self.status(
            f"Rebuilt {name} as a pipeline of {len(pipeline.program)} ops beside its measurement"
            if rebuilt
            else f"Opened measurement {name}: {len(timeline)} ops on "
            f"{timeline.device or 'unknown device'}"
        )

    def _on_measurement_failed(self, err: BaseException) -> None:
        name = Path(self._loading_path or "").name
        self._rebuilding = False
        self.status(f"Cannot open measurement {name}")
        if isinstance(err, ValueError | OSError):  # TraceError is a ValueError
            message = str(err) or type(err).__name__
        else:  # a bug in a reader must not take the window down: say what it was
            message = f"unexpected {type(err).__name__}: {err}"
        window: Any = self
        dialogs.show_error(window, "Cannot open measurement", f"{name}: {message}")

    def _should_adopt(self, pipeline: Any, file_name: str) -> bool:
        """Whether to open the pipeline a run was measured on in place of the document."""
        current = self.controller.pipeline
        if pipeline.to_dict()["program"] == current.to_dict()["program"]:
            return False
        if not current.program and not self.controller.is_dirty:
            return True  # nothing to lose: an empty document
        return dialogs.ask_yes_no(
            self,  # type: ignore[arg-type]
            "Open the measured pipeline?",
            f"{file_name} was measured on a different pipeline ({pipeline.name}). "
            "Open that pipeline too, so the charts compare like with like?",
        )


def _loader(path: str) -> Any:  # noqa: ANN401 - the work function a TaskRunner runs
    def load(progress: Any, cancel: Any) -> tuple[Any, Any]:  # noqa: ANN401
        from swimlanes.timeline.formats.io import load_timeline_any

        return load_timeline_any(path, progress=progress, cancel=cancel)

    return load


def _rebuilder(path: str) -> Any:  # noqa: ANN401 - the work function a TaskRunner runs
    def rebuild(progress: Any, cancel: Any) -> tuple[Any, Any]:  # noqa: ANN401
        from swimlanes.services.errors import CommandError
        from swimlanes.services.trace_pipeline import rebuild as rebuild_timeline
        from swimlanes.timeline.formats.io import load_timeline_any

        timeline, _ = load_timeline_any(path, progress=progress, cancel=cancel)
        try:
            result = rebuild_timeline(timeline, None, name=f"{Path(path).stem} (rebuilt)")
        except CommandError as err:  # shown like any unreadable file
            raise ValueError(str(err)) from None
        return result.rebuilt.measured, result.rebuilt.pipeline

    return rebuild
