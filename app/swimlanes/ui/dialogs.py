"""Message boxes, file dialogs and the File menu's flows built on them (open, save, examples,
measurements, export), in one place so tests can replace the dialogs."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox, QProgressDialog, QWidget

from swimlanes import __version__
from swimlanes.model.document import Pipeline
from swimlanes.model.validate import PipelineError

PIPELINE_FILTER = "Swimlanes pipelines (*.json);;All files (*)"
MEASUREMENT_FILTER = (
    "Measurements and traces (*.json *.json.gz *.gz);;Swimlanes runs (*.json);;All files (*)"
)
IMAGE_FILTER = "PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf)"
TRACE_FILTER = "Perfetto / Chrome trace (*.json)"
CSV_FILTER = "CSV table (*.csv)"
PRESET_FILTER = "Device presets (*.json);;All files (*)"

Button = QMessageBox.StandardButton


def ask_save_changes(parent: QWidget, document_name: str) -> str:
    """'save', 'discard' or 'cancel' for a document with unsaved changes."""
    answer = QMessageBox.question(
        parent,
        "Unsaved changes",
        f"Save the changes to {document_name}?\n\nYour changes are lost if you don't save them.",
        Button.Save | Button.Discard | Button.Cancel,
        Button.Save,
    )
    if answer == Button.Save:
        return "save"
    if answer == Button.Discard:
        return "discard"
    return "cancel"


def show_problems(parent: QWidget, title: str, summary: str, problems: Sequence[Any]) -> None:
    """An error with every problem listed (a bad file, an invalid document)."""
    lines = [str(p) for p in problems]
    box = QMessageBox(QMessageBox.Icon.Warning, title, summary, Button.Ok, parent)
    if lines:
        shown = lines[:15] + ([f"... and {len(lines) - 15} more"] if len(lines) > 15 else [])
        box.setInformativeText("\n".join(shown))
        box.setDetailedText("\n".join(lines))
    box.exec()


def show_error(parent: QWidget, title: str, message: str) -> None:
    QMessageBox.warning(parent, title, message)


def ask_restore_recovery(parent: QWidget | None, saved_at: str, original: str | None) -> bool:
    """Whether to restore the document an earlier session left unsaved."""
    where = f"\n\nIt was {original}." if original else ""
    answer = QMessageBox.question(
        parent,
        "Restore unsaved work?",
        f"Swimlanes did not close normally last time. A copy of the unsaved document from "
        f"{saved_at} was kept.{where}\n\nRestore it?",
        Button.Yes | Button.No,
        Button.Yes,
    )
    return answer == Button.Yes


def ask_yes_no(parent: QWidget, title: str, text: str) -> bool:
    return QMessageBox.question(parent, title, text, Button.Yes | Button.No) == Button.Yes


def about(parent: QWidget) -> None:
    QMessageBox.about(
        parent,
        "About Swimlanes",
        f"<h3>Swimlanes {__version__}</h3>"
        "<p>Design, simulate and measure CUDA stream pipelines. Put copies, kernels, events "
        "and syncs on stream lanes, simulate the schedule on a model of the GPU's engines, run "
        "it on a real GPU, and compare both Gantt charts side by side.</p>"
        "<p>MIT licence.</p>",
    )


def show_lesson(parent: QWidget, title: str, description: str, document_name: str) -> None:
    QMessageBox.information(
        parent,
        f"Lesson: {title}" if title else "Lesson",
        f"<h3>{html.escape(title or document_name)}</h3><p>{html.escape(description)}</p>",
    )


def open_file(parent: QWidget, caption: str, folder: str, filters: str) -> str | None:
    path, _ = QFileDialog.getOpenFileName(parent, caption, folder, filters)
    return path or None


def save_file(parent: QWidget, caption: str, suggested: str, filters: str) -> str | None:
    path, _ = QFileDialog.getSaveFileName(parent, caption, suggested, filters)
    return path or None


class FileHandling:
    """The File menu's flows, mixed into MainWindow (which provides the attributes used here)."""

    controller: Any
    settings: Any
    sim_runner: Any
    actions: Any
    menus: Any
    charts: Any
    simulated: Any
    measured: Any
    measured_pipeline: Any
    example_name: str | None = None

    def connect_file_actions(self) -> None:
        a = self.actions
        a.new.triggered.connect(self.new_document)
        a.open.triggered.connect(lambda: self.open_document())
        a.save.triggered.connect(self.save)
        a.save_as.triggered.connect(self.save_as)
        a.quit.triggered.connect(self.close)
        a.open_measurement.triggered.connect(lambda: self.open_measurement())
        a.save_measurement.triggered.connect(self.save_measurement)
        a.save_measurement.setEnabled(False)
        a.export_image.triggered.connect(lambda: self.export_image(visible_range=False))
        a.export_image_visible.triggered.connect(lambda: self.export_image(visible_range=True))
        a.export_trace.triggered.connect(self.export_trace)
        a.export_csv.triggered.connect(self.export_csv)
        self.menus.recent.aboutToShow.connect(self.fill_recent_menu)

    # -- documents ----------------------------------------------------------------------------
    def document_name(self) -> str:
        c = self.controller
        return c.path.name if c.path else c.pipeline.name

    def maybe_save(self) -> bool:
        """Ask about unsaved changes; False when the user cancelled."""
        if not self.controller.is_dirty:
            return True
        answer = ask_save_changes(self, self.document_name())
        if answer == "save":
            return self.save()
        return answer == "discard"

    def new_document(self) -> None:
        if self.maybe_save():
            self._replace_document(Pipeline(), None, None)
            self.status("New pipeline")

    def open_document(self, path: str | None = None) -> bool:
        """Open a pipeline file (asks for one when ``path`` is None)."""
        if not self.maybe_save():
            return False
        folder = str(self.controller.path.parent) if self.controller.path else str(Path.home())
        path = path or open_file(self, "Open pipeline", folder, PIPELINE_FILTER)
        if path and not looks_like_pipeline(Path(path)):
            return self.open_measurement(path)  # a run or a trace: show it beside the model
        return bool(path) and self.load_path(path)

    def load_path(self, path: str, *, example: str | None = None) -> bool:
        """Load ``path`` without asking about unsaved changes; problems go to a message box."""
        from swimlanes.model.io import load_pipeline

        try:
            pipeline = load_pipeline(path)
        except PipelineError as err:
            show_problems(
                self, "Cannot open pipeline", f"{Path(path).name} cannot be opened:", err.problems
            )
            return False
        if not example:
            self.settings.add_recent_file(path)
        self.status(f"Opened {Path(path).name}: {len(pipeline.program)} ops")
        self._replace_document(pipeline, None if example else path, example)
        return True

    def open_example(self, name: str) -> bool:
        """Open a shipped example as a new, unsaved document (Save asks where to put it)."""
        from swimlanes.resources import example_path

        return self.maybe_save() and self.load_path(str(example_path(name)), example=name)

    def _replace_document(self, pipeline: Pipeline, path: str | None, example: str | None) -> None:
        self.example_name = example
        self.set_measured(None)  # type: ignore[attr-defined]
        device = pipeline.extra.get("device")
        if isinstance(device, str):
            self.set_device(device, simulate=False)  # type: ignore[attr-defined]
        self.controller.set_pipeline(pipeline, path)
        self.sim_runner.simulate_now()
        self.charts.fit_all()
        self.fill_shipped_measurements()
        self.actions.lesson.setEnabled(bool(pipeline.extra.get("description")))
        if example and self.shipped_measurements():
            self.status(
                f"Opened example {example}. A measured run of it ships with Swimlanes: "
                "File > Shipped measurements",
                15000,
            )

    def save(self) -> bool:
        if self.controller.path is None:
            return self.save_as()
        return self._save_to(str(self.controller.path))

    def save_as(self) -> bool:
        suggested = str(self.controller.path or Path.home() / f"{self.document_name()}.json")
        path = save_file(self, "Save pipeline", suggested, PIPELINE_FILTER)
        if not path:
            return False
        if not Path(path).suffix:
            path += ".json"
        return self._save_to(path)

    def _save_to(self, path: str) -> bool:
        try:
            self.controller.save(path)
        except OSError as err:
            show_error(
                self, "Cannot save", f"{path} could not be written: {err}\n\nNothing was lost."
            )
            return False
        self.example_name = None
        self.settings.add_recent_file(path)
        self.status(f"Saved {path}")
        return True

    # -- menus --------------------------------------------------------------------------------
    def fill_recent_menu(self) -> None:
        menu = self.menus.recent
        menu.clear()
        files = self.settings.recent_files()
        for path in files:
            menu.addAction(Path(path).name, lambda p=path: self.open_document(p)).setToolTip(path)
        if not files:
            menu.addAction("No recent files").setEnabled(False)
        else:
            menu.addSeparator()
            menu.addAction("Clear list", self.settings.clear_recent_files)

    def fill_examples_menu(self) -> None:
        from swimlanes.resources import example_names, example_path

        menu = self.menus.examples
        menu.clear()
        for name in example_names():
            lesson = _lesson_title(example_path(name))
            text = f"{lesson}  ({name})" if lesson else name
            menu.addAction(text, lambda n=name: self.open_example(n))
        if menu.isEmpty():
            menu.addAction("No examples found").setEnabled(False)

    def shipped_measurements(self) -> list[Path]:
        """Shipped measured runs of the open example (``<example>.<device>.json``)."""
        from swimlanes.resources import measurements_dir

        if not self.example_name:
            return []
        return sorted(measurements_dir().glob(f"{self.example_name}.*.json"))

    def fill_shipped_measurements(self) -> None:
        menu = self.menus.shipped_measurements
        menu.clear()
        found = self.shipped_measurements()
        for path in found:
            device = path.name[len(f"{self.example_name}.") : -len(".json")]
            menu.addAction(f"Measured on {device}", lambda p=str(path): self.open_measurement(p))
        menu.setEnabled(bool(found))
        menu.setToolTip("" if found else "Only the shipped examples come with measurements")

    def show_lesson(self) -> None:
        extra = self.controller.pipeline.extra
        description = str(extra.get("description") or "This pipeline carries no lesson text.")
        show_lesson(self, str(extra.get("lesson") or ""), description, self.document_name())

    # -- measurements -------------------------------------------------------------------------
    def open_measurement(self, path: str | None = None) -> bool:
        """Load a measured run or a profiler trace and show it beside the simulation."""
        from swimlanes.resources import measurements_dir

        path = path or open_file(
            self, "Open measurement", str(measurements_dir()), MEASUREMENT_FILTER
        )
        if not path:
            return False
        loaded = self._load_measurement(path)
        if loaded is None:
            return False
        timeline, pipeline = loaded
        if pipeline is not None and self._should_adopt(pipeline, Path(path).name):
            if not self.maybe_save():
                return False
            self._replace_document(pipeline, None, None)
        self.set_measured(timeline, pipeline)  # type: ignore[attr-defined]
        self.charts.fit_all()
        self.status(
            f"Opened measurement {Path(path).name}: {len(timeline)} ops on {timeline.device or 'unknown device'}"
        )
        return True

    def _should_adopt(self, pipeline: Pipeline, file_name: str) -> bool:
        """Whether to open the pipeline a run was measured on in place of the document."""
        current = self.controller.pipeline
        if pipeline.to_dict()["program"] == current.to_dict()["program"]:
            return False
        if not current.program and not self.controller.is_dirty:
            return True  # nothing to lose: an empty document
        return ask_yes_no(
            self,
            "Open the measured pipeline?",
            f"{file_name} was measured on a different pipeline ({pipeline.name}). "
            "Open that pipeline too, so the charts compare like with like?",
        )

    def _load_measurement(self, path: str) -> tuple[Any, Any] | None:
        from swimlanes.timeline.io import load_timeline_any

        progress = QProgressDialog(f"Loading {Path(path).name}...", "Cancel", 0, 1000, self)
        progress.setWindowModality(Qt.WindowModality.WindowModal)
        progress.setMinimumDuration(400)

        def on_progress(fraction: float) -> None:
            progress.setValue(int(1000 * fraction))
            QApplication.processEvents()

        try:
            return load_timeline_any(path, progress=on_progress, cancel=progress.wasCanceled)
        except (ValueError, OSError) as err:
            if not progress.wasCanceled():
                show_error(self, "Cannot open measurement", f"{Path(path).name}: {err}")
            return None
        finally:
            progress.close()

    def save_measurement(self) -> bool:
        from swimlanes.timeline.io import save_run

        if self.measured is None:
            return False
        suggested = str(Path.home() / f"{self.document_name()}.{_slug(self.measured.device)}.json")
        path = save_file(self, "Save measurement", suggested, "Swimlanes runs (*.json)")
        if not path:
            return False
        try:
            save_run(path, self.measured, self.measured_pipeline)
        except OSError as err:
            show_error(self, "Cannot save measurement", f"{path}: {err}")
            return False
        self.status(f"Saved measurement {path}")
        return True

    # -- export -------------------------------------------------------------------------------
    def _timelines(self) -> list[Any]:
        return [t for t in (self.simulated, self.measured) if t is not None]

    def _export_path(self, caption: str, suffix: str, filters: str) -> str | None:
        if not self._timelines():
            show_error(self, caption, "There is nothing to export yet.")
            return None
        suggested = str(Path.home() / f"{Path(self.document_name()).stem}{suffix}")
        return save_file(self, caption, suggested, filters)

    def export_image(self, visible_range: bool = False) -> bool:
        from swimlanes.ui.export_image import export_image

        path = self._export_path("Export image", ".png", IMAGE_FILTER)
        if not path:
            return False
        if Path(path).suffix.lower() not in (".png", ".svg", ".pdf"):
            path += ".png"
        x_range = self.charts.x_range_ns() if visible_range else None
        return self._export(
            path,
            lambda: export_image(
                path, self.simulated, self.measured, title=self.document_name(), x_range_ns=x_range
            ),
        )

    def export_trace(self) -> bool:
        from swimlanes.timeline.chrome_trace import write_chrome_trace

        path = self._export_path("Export Perfetto trace", ".trace.json", TRACE_FILTER)
        return bool(path) and self._export(
            path, lambda: write_chrome_trace(self._timelines(), path)
        )

    def export_csv(self) -> bool:
        from swimlanes.timeline.csv_export import write_op_csv

        path = self._export_path("Export CSV", ".csv", CSV_FILTER)
        return bool(path) and self._export(path, lambda: write_op_csv(self._timelines(), path))

    def _export(self, path: str, write: Any) -> bool:
        try:
            write()
        except (OSError, ValueError) as err:
            show_error(self, "Export failed", f"{path}: {err}")
            return False
        self.status(f"Exported {path}")
        return True

    def status(self, text: str, msecs: int = 8000) -> None:
        self.statusBar().showMessage(text, msecs)  # type: ignore[attr-defined]


def looks_like_pipeline(path: Path) -> bool:
    """False for files that are clearly measurements or traces (runs, timelines, gzip)."""
    try:
        with path.open("rb") as f:
            head = f.read(512)
    except OSError:
        return True  # load_path reports the problem clearly
    if b"swimlanes-pipeline" in head:
        return True
    markers = (b"swimlanes-run", b"swimlanes-timeline", b"traceEvents")
    return not (head[:2] == b"\x1f\x8b" or any(m in head for m in markers))


def _lesson_title(path: Path) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(data.get("lesson", "")) if isinstance(data, dict) else ""


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-") or "gpu"
