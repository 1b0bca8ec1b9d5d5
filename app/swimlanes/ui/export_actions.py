"""The main window's File menu exports: the measurement as a run, the charts as an image, both
timelines as a Perfetto trace or a CSV table, the pipeline as code (a mixin of
:class:`~swimlanes.ui.main_window.MainWindow`, beside :class:`~swimlanes.ui.dialogs.FileHandling`).
The file dialogs are called through :mod:`swimlanes.ui.dialogs`, where tests replace them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swimlanes.ui import dialogs


class ExportActions:
    """Saving and exporting what the window shows; expects the main window's ``simulated``,
    ``measured``, ``measured_pipeline``, ``controller``, ``charts``, ``code_view``,
    ``document_name``, ``document_stem`` and ``status``."""

    simulated: Any
    measured: Any
    measured_pipeline: Any
    controller: Any
    charts: Any
    code_view: Any
    document_name: Any
    document_stem: Any
    status: Any

    # -- measurements (loading: measurement_loading.MeasurementLoading) -------------------
    def save_measurement(self) -> bool:
        from swimlanes.timeline.formats.io import save_run

        if self.measured is None:
            return False
        suggested = str(
            Path.home() / f"{self.document_stem()}.{dialogs.file_slug(self.measured.device)}.json"
        )
        path = dialogs.save_file(self, "Save measurement", suggested, "Swimlanes runs (*.json)")
        if not path:
            return False
        try:
            save_run(path, self.measured, self.measured_pipeline)
        except OSError as err:
            dialogs.show_error(self, "Cannot save measurement", f"{path}: {err}")
            return False
        self.status(f"Saved measurement {path}")
        return True

    # -- export -------------------------------------------------------------------------------
    def _timelines(self) -> list[Any]:
        return [t for t in (self.simulated, self.measured) if t is not None]

    def _export_path(self, caption: str, suffix: str, filters: str) -> str | None:
        if not self._timelines():
            dialogs.show_error(self, caption, "There is nothing to export yet.")
            return None
        suggested = str(Path.home() / f"{self.document_stem()}{suffix}")
        return dialogs.save_file(self, caption, suggested, filters)

    def export_image(self, visible_range: bool = False) -> bool:
        from swimlanes.ui.export_image import export_image

        path = self._export_path("Export image", ".png", dialogs.IMAGE_FILTER)
        if not path:
            return False
        if Path(path).suffix.lower() not in (".png", ".svg", ".pdf"):
            path += ".png"
        x_range = self.charts.x_range_ns() if visible_range else None
        return self._export(
            path,
            lambda: export_image(
                path,
                self.simulated,
                self.measured,
                title=self.document_name(),
                x_range_ns=x_range,
                pipeline_name=self.controller.pipeline.name,
            ),
        )

    def export_trace(self) -> bool:
        from swimlanes.timeline.formats.chrome_trace import write_chrome_trace

        path = self._export_path("Export Perfetto trace", ".trace.json", dialogs.TRACE_FILTER)
        return bool(path) and self._export(
            path, lambda: write_chrome_trace(self._timelines(), path)
        )

    def export_csv(self) -> bool:
        from swimlanes.timeline.formats.csv_export import write_op_csv

        path = self._export_path("Export CSV", ".csv", dialogs.CSV_FILTER)
        return bool(path) and self._export(path, lambda: write_op_csv(self._timelines(), path))

    def export_code(self, language: str = "") -> bool:
        """File > Export code: the pipeline as a Numba CUDA script (.py) or a CUDA C++ program
        (.cu). The file-type filter picks the language (``language`` is the one offered first);
        a name typed with the other language's suffix gets that language."""
        from swimlanes.codegen import LANGUAGES
        from swimlanes.model.atomic_write import write_text_atomic

        if language not in dialogs.CODE_FILTERS:
            language = self.code_view.language()
        folder = self.controller.path.parent if self.controller.path else Path.home()
        suggested = str(folder / f"{self.document_stem()}{dialogs.CODE_FILTERS[language][1]}")
        filters = ";;".join(f for f, _ in dialogs.CODE_FILTERS.values())
        chosen = dialogs.save_file_with_filter(
            self, "Export code", suggested, filters, dialogs.CODE_FILTERS[language][0]
        )
        if not chosen:
            return False
        path, picked = chosen
        language = next((k for k, (f, _) in dialogs.CODE_FILTERS.items() if f == picked), language)
        suffix = Path(path).suffix.lower()
        by_suffix = [k for k, (_, s) in dialogs.CODE_FILTERS.items() if s == suffix]
        if by_suffix:
            language = by_suffix[0]
        else:
            path += dialogs.CODE_FILTERS[language][1]
        pipeline = self.controller.pipeline
        try:
            write_text_atomic(path, LANGUAGES[language](pipeline))
        except (OSError, ValueError) as err:  # ValueError: CodegenError, a number too large
            why = (err.strerror if isinstance(err, OSError) else None) or err
            dialogs.show_error(self, "Export failed", f"{path}: {why}\n\nNothing was written.")
            return False
        kind = "Numba CUDA Python script" if language == "python" else "CUDA C++ program"
        self.status(f"Exported the {kind} of {len(pipeline.program)} ops to {path}")
        return True

    def _export(self, path: str, write: Any) -> bool:
        try:
            write()
        except (OSError, ValueError) as err:
            why = (err.strerror if isinstance(err, OSError) else None) or err
            # The writers leave a file already at ``path`` as it was.
            dialogs.show_error(self, "Export failed", f"{path}: {why}\n\nNothing was written.")
            return False
        self.status(f"Exported {path}")
        return True
