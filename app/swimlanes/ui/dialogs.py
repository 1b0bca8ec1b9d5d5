"""Message boxes, file dialogs and the File menu's flows built on them (open, save, examples,
saving measurements, export, code export), in one place so tests can replace the dialogs.
Opening a measurement, which loads in a worker thread, is in measurement_loading."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from swimlanes import __version__
from swimlanes.model.document import Pipeline
from swimlanes.model.validate import PipelineError

PIPELINE_FILTER = "Swimlanes pipelines (*.json);;All files (*)"
MEASUREMENT_FILTER = (
    "Measurements and traces (*.json *.json.gz *.gz *.sqlite);;Swimlanes runs (*.json);;"
    "Nsight Systems SQLite exports (*.sqlite);;All files (*)"
)
IMAGE_FILTER = "PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf)"
TRACE_FILTER = "Perfetto / Chrome trace (*.json)"
CSV_FILTER = "CSV table (*.csv)"
PRESET_FILTER = "Device presets (*.json);;All files (*)"
#: File > Export code: the filter the user picks is the language (swimlanes.codegen key).
CODE_FILTERS = {
    "python": ("Numba CUDA Python script (*.py)", ".py"),
    "cuda": ("CUDA C++ source (*.cu)", ".cu"),
}

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


def open_file(parent: QWidget, caption: str, folder: str, filters: str) -> str | None:
    path, _ = QFileDialog.getOpenFileName(parent, caption, folder, filters)
    return path or None


def save_file(parent: QWidget, caption: str, suggested: str, filters: str) -> str | None:
    path, _ = QFileDialog.getSaveFileName(parent, caption, suggested, filters)
    return path or None


def save_file_with_filter(
    parent: QWidget, caption: str, suggested: str, filters: str, selected: str
) -> tuple[str, str] | None:
    """(path, the filter the user picked), or None if cancelled."""
    path, chosen = QFileDialog.getSaveFileName(parent, caption, suggested, filters, selected)
    return (path, chosen) if path else None


class FileHandling:
    """The File menu's flows, mixed into MainWindow (which provides the attributes used here)."""

    controller: Any
    settings: Any
    sim_runner: Any
    actions: Any
    menus: Any
    charts: Any
    code_view: Any
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
        a.open_trace_as_pipeline.triggered.connect(lambda: self.open_trace_as_pipeline())
        a.diff_with.triggered.connect(lambda: self.diff_with())
        a.save_measurement.triggered.connect(self.save_measurement)
        a.save_measurement.setEnabled(False)
        a.export_image.triggered.connect(lambda: self.export_image(visible_range=False))
        a.export_image_visible.triggered.connect(lambda: self.export_image(visible_range=True))
        a.export_trace.triggered.connect(self.export_trace)
        a.export_csv.triggered.connect(self.export_csv)
        a.export_code.triggered.connect(lambda: self.export_code())
        self.menus.recent.aboutToShow.connect(self.fill_recent_menu)

    # -- documents ----------------------------------------------------------------------------
    def document_name(self) -> str:
        c = self.controller
        return c.path.name if c.path else c.pipeline.name

    def document_stem(self) -> str:
        """A file name (no suffix) to suggest for the document and its exports: the file's,
        the example's, or the pipeline's name made safe (it may hold '/' or ':')."""
        c = self.controller
        if c.path:
            return c.path.stem
        return self.example_name or file_slug(c.pipeline.name, "pipeline")

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
        from swimlanes.model.atomic_write import remove_stale_temps
        from swimlanes.model.io import load_pipeline
        from swimlanes.resources import shipped_example_name

        try:
            pipeline = load_pipeline(path)
        except PipelineError as err:
            show_problems(
                self, "Cannot open pipeline", f"{Path(path).name} cannot be opened:", err.problems
            )
            return False
        if not example:
            self.settings.add_recent_file(path)
            # a Save killed mid-write left its temp file beside the document: tidy it now
            remove_stale_temps(path)
        self.status(f"Opened {Path(path).name}: {len(pipeline.program)} ops")
        self._replace_document(pipeline, None if example else path, example)
        if not example and (shipped := shipped_example_name(path)):
            self._offer_shipped_measurements(shipped)
        return True

    def _offer_shipped_measurements(self, name: str) -> None:
        """A shipped example opened by its path (recent files, the command line) stays that
        file, and gets its shipped measurements as from File > Examples (a captured program's
        loads beside it)."""
        self.example_name = name
        self.fill_shipped_measurements()
        self._open_shipped_capture()

    def _open_shipped_capture(self) -> bool:
        """Load the open captured program's shipped measurement beside it (a captured program
        is its measurement first: the edits are what-ifs against it); False if the open
        document is no captured program with one."""
        shipped = self.shipped_measurements()
        if not (shipped and _is_capture(self.example_name)):
            return False
        self.open_measurement(str(shipped[0]))  # type: ignore[attr-defined]
        return True

    def open_example(self, name: str) -> bool:
        """Open a shipped example as a new, unsaved document (Save asks where to put it)."""
        from swimlanes.resources import example_path

        return self.maybe_save() and self.load_path(str(example_path(name)), example=name)

    def _replace_document(self, pipeline: Pipeline, path: str | None, example: str | None) -> None:
        self.build_charts()  # type: ignore[attr-defined] # a document is shown in them: at once
        self.example_name = example
        # A measurement still loading was asked for the document that is being replaced.
        self.measurement_task.cancel()  # type: ignore[attr-defined]
        self.set_measured(None)  # type: ignore[attr-defined]
        self.use_document_device(pipeline)  # type: ignore[attr-defined]
        self.controller.set_pipeline(pipeline, path)
        self.sim_runner.simulate_now()
        self.charts.fit_all()
        self.fill_shipped_measurements()
        self.actions.lesson.setEnabled(bool(pipeline.extra.get("description")))
        if example:  # its lesson, the first time (once the window is laid out and shown)
            QTimer.singleShot(0, self, lambda: self._offer_first_lesson(example))
        if example and not self._open_shipped_capture() and self.shipped_measurements():
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
        suggested = str(self.controller.path or Path.home() / f"{self.document_stem()}.json")
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

    def diff_with(self, path: str | None = None) -> bool:
        """Show the document's schedule (its simulation, else its measurement) above another
        timeline's: a pipeline simulated on this device, or a run or trace as measured. The
        other one loads off the UI thread; False if nothing was started."""
        from swimlanes.ui.workers import TaskRunner

        mine = self.simulated if self.simulated is not None else self.measured  # type: ignore[attr-defined]
        if mine is None:
            self.status("Nothing to compare yet: the document has no schedule")
            return False
        path = path or dialogs_open_timeline(self)
        if not path:
            return False
        if getattr(self, "_diff_task", None) is None:
            self._diff_task = TaskRunner(self)  # type: ignore[arg-type]
            self._diff_task.finished.connect(self._show_diff)
            self._diff_task.failed.connect(self._diff_failed)
        self._diff_pair = (mine, path)
        device = self.sim_runner.device  # type: ignore[attr-defined]
        self._diff_task.start(_other_timeline(path, device))
        self.status(f"Loading {Path(path).name} to compare...")
        return True

    def _show_diff(self, other: object) -> None:
        from swimlanes.ui.diff_view import DiffWindow

        mine, _path = self._diff_pair
        window = DiffWindow(mine, other, parent=self)  # type: ignore[arg-type]
        self.diff_windows = [w for w in getattr(self, "diff_windows", []) if w.isVisible()]
        self.diff_windows.append(window)
        window.show()
        self.status(window.summary.text())

    def _diff_failed(self, err: object) -> None:
        _mine, path = self._diff_pair
        show_error(self, "Cannot compare", f"{Path(path).name}: {err}")  # type: ignore[arg-type]

    def fill_examples_menu(self) -> None:
        from swimlanes.resources import capture_names, example_names, example_path

        menu = self.menus.examples
        menu.clear()
        for name in example_names():
            lesson = _lesson_title(example_path(name))
            text = f"{lesson}  ({name})" if lesson else name
            menu.addAction(text, lambda n=name: self.open_example(n))
        if menu.isEmpty():
            menu.addAction("No examples found").setEnabled(False)
        captured = capture_names()
        if captured:  # real programs captured on a GPU, each with its measurement
            menu.addSection("Captured programs")
        for name in captured:
            lesson = _lesson_title(example_path(name))
            menu.addAction(f"{lesson}  ({name})" if lesson else name,
                           lambda n=name: self.open_example(n))  # fmt: skip

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
        from swimlanes.ui.lessons import show_lesson_dialog

        extra = self.controller.pipeline.extra
        show_lesson_dialog(self, self.settings, extra, self.document_name())  # type: ignore[arg-type]

    def show_guide(self, page: str | None = None) -> None:
        from swimlanes.ui.help_viewer import open_guide

        open_guide(self, page)  # type: ignore[arg-type]

    def show_shortcuts(self) -> None:
        from swimlanes.ui.help_viewer import open_shortcuts

        open_shortcuts(self)  # type: ignore[arg-type]

    def _offer_first_lesson(self, example: str) -> None:
        from swimlanes.ui.lessons import offer_first_lesson

        if self.example_name == example:  # still the open document
            offer_first_lesson(self, self.settings, example, self.controller.pipeline.extra)  # type: ignore[arg-type]

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


def file_slug(text: str, default: str = "gpu") -> str:
    """``text`` as a file-name part: lower case, runs of other characters as one '-'."""
    return re.sub(r"[^0-9a-z]+", "-", text.lower()).strip("-") or default


def dialogs_open_timeline(parent: Any) -> str | None:  # noqa: ANN401 - the main window
    """Ask for a pipeline, run, timeline or trace file to compare with."""
    from swimlanes.resources import examples_dir

    return open_file(
        parent,
        "Diff with another timeline",
        str(examples_dir()),
        "Pipelines, runs and traces (*.json *.json.gz *.gz *.sqlite);;All files (*)",
    )


def _other_timeline(path: str, device: Any) -> Any:  # noqa: ANN401 - a TaskRunner's work
    def load(progress: Any, cancel: Any) -> Any:  # noqa: ANN401
        from swimlanes.services.errors import CommandError
        from swimlanes.services.simulation import timeline_of_file

        try:
            return timeline_of_file(path, device if isinstance(device, str) else None)
        except CommandError as err:
            raise ValueError(str(err)) from None

    return load


def _is_capture(example: str | None) -> bool:
    """Whether ``example`` is one of the shipped captured programs (resources/captures)."""
    from swimlanes.resources import capture_names

    return example in capture_names()
