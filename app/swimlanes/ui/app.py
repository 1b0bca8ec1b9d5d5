"""Start the desktop app: QApplication set-up, the main window, crash recovery, event loop.

Heavy modules (numba, cuda.bindings, CUPTI, the GPU executor) are never imported here: GPU
work happens in a child process, and a test holds start-up to importing none of them.

``SWIMLANES_REPORT_FIRST_PAINT=1`` makes the app print, as one JSON line, the wall-clock time
of the main window's first paint and the seconds main() took to it, then quit
(benchmarks/bench_import.py --startup).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication

from swimlanes import __version__
from swimlanes.resources import example_names, icons_dir
from swimlanes.ui.main_thread_gc import install_main_thread_gc
from swimlanes.ui.settings import APPLICATION, ORGANIZATION

#: Opened when the app starts without a file (the first one that exists).
DEFAULT_EXAMPLES = ("chunked-overlap", "two-streams")


def create_application(argv: list[str] | None = None) -> QApplication:
    """The QApplication, configured once (names for QSettings, style, icon)."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        install_main_thread_gc()
        return existing
    QGuiApplication.setHighDpiScaleFactorRoundingPolicy(
        Qt.HighDpiScaleFactorRoundingPolicy.PassThrough
    )
    app = QApplication(argv if argv is not None else sys.argv[:1])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("swimlanes")
    # Fusion draws the same everywhere and follows the system light/dark palette in Qt 6.
    app.setStyle("Fusion")
    icon = icons_dir() / "swimlanes.svg"
    if icon.is_file():
        app.setWindowIcon(QIcon(str(icon)))
    install_main_thread_gc()
    return app


def default_example() -> str | None:
    names = set(example_names())
    return next((n for n in DEFAULT_EXAMPLES if n in names), None)


def open_initial(window, file: str | None) -> None:  # noqa: ANN001 - MainWindow, imported lazily
    """Open ``file`` (a pipeline or a measurement), or the default example."""
    if file and window.open_document(file):
        return
    name = default_example()
    if name:
        window.open_example(name)


class FirstPaint(QObject):
    """Calls ``then`` once, right after the first paint of any widget of ``window``."""

    def __init__(self, window: QObject, then: object) -> None:
        super().__init__(window)
        self._window = window
        self._then = then
        self._seen = False
        app = QApplication.instance()
        assert app is not None
        app.installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if not self._seen and event.type() == QEvent.Type.Paint:
            window = getattr(obj, "window", None)
            if callable(window) and window() is self._window:
                self._seen = True
                QApplication.instance().removeEventFilter(self)
                QTimer.singleShot(0, self._then)  # once this paint is done
        return False


def main(file: str | None = None) -> int:
    """Run the desktop app; returns the exit code."""
    started = time.perf_counter()
    app = create_application()
    from swimlanes.ui.main_window import MainWindow

    # What start-up imported stays: the collector need not walk it again (a 33 ms collection
    # before the first paint).
    gc.freeze()
    window = MainWindow()
    open_initial(window, file)
    window.show()
    report = os.environ.get("SWIMLANES_REPORT_FIRST_PAINT") == "1"

    def after_first_paint() -> None:
        # Measured from the start of main() to the end of the window's first paint.
        window.startup_seconds = time.perf_counter() - started
        if report:
            line = {"first_paint_wall": time.time(), "main_to_paint_s": window.startup_seconds}
            print(json.dumps(line), flush=True)
            window.controller.undo_stack.setClean()
            app.quit()
            return
        window.offer_recovery()

    window.first_paint = FirstPaint(window, after_first_paint)
    return int(app.exec())
