"""Start the desktop app: QApplication set-up, the main window, crash recovery, event loop.

Heavy modules (numba, the GPU executor) are never imported here: the window is up in well
under two seconds, and GPU work happens in a child process anyway.
"""

from __future__ import annotations

import sys
import time

from PySide6.QtCore import Qt, QTimer
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


def main(file: str | None = None) -> int:
    """Run the desktop app; returns the exit code."""
    started = time.perf_counter()
    app = create_application()
    from swimlanes.ui.main_window import MainWindow

    window = MainWindow()
    open_initial(window, file)
    window.show()

    def after_first_paint() -> None:
        # Measured from process start of main() to the first turn of the event loop.
        window.startup_seconds = time.perf_counter() - started
        window.offer_recovery()

    QTimer.singleShot(0, after_first_paint)
    return int(app.exec())
