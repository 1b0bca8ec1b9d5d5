"""Start the desktop app: QApplication set-up, the main window, crash recovery, event loop.

Heavy modules (numba, cuda.bindings, CUPTI, the GPU executor) are never imported here: GPU
work happens in a child process, and a test holds start-up to importing none of them.

The window paints first without its charts (pyqtgraph and the Gantt charts are most of the
cost of a start); they are built right after that first paint, and the file to open (or the
default example) is opened as soon as they exist (``start_window``).

``SWIMLANES_REPORT_FIRST_PAINT=1`` makes the app print, as one JSON line, the wall-clock times
of the main window's first paint and of the first paint of its charts with the file shown, and
the seconds main() took to each, then quit (benchmarks/bench_import.py --startup).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication, QWidget

from swimlanes import __version__
from swimlanes.resources import example_names, icons_dir
from swimlanes.ui.main_thread_gc import install_main_thread_gc
from swimlanes.ui.settings import APPLICATION, ORGANIZATION

if TYPE_CHECKING:
    from swimlanes.ui.main_window import MainWindow

#: Opened when the app starts without a file (the first one that exists).
DEFAULT_EXAMPLES = ("chunked-overlap", "two-streams")
#: A window that has not painted by then (started minimised, say) builds its charts anyway.
CHARTS_AT_THE_LATEST_MS = 2000


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


def open_initial(window: MainWindow, file: str | None) -> None:
    """Open ``file`` (a pipeline or a measurement), or the default example."""
    if file and window.open_document(file):
        return
    name = default_example()
    if name:
        window.open_example(name)


class FirstPaint(QObject):
    """Calls ``then`` once, right after the first paint of ``widget`` or of a widget in it
    (``widget`` a window: of any widget of that window)."""

    def __init__(self, widget: QWidget, then: Callable[[], object]) -> None:
        super().__init__(widget)
        self._widget = widget
        self._then = then
        self._seen = False
        app = QApplication.instance()
        assert app is not None
        app.installEventFilter(self)

    def _is_inside(self, obj: QObject) -> bool:
        if not isinstance(obj, QWidget):
            return False
        w = self._widget
        if w.isWindow() and obj.window() is w:
            return True
        return obj is w or w.isAncestorOf(obj)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if not self._seen and event.type() == QEvent.Type.Paint and self._is_inside(obj):
            self._seen = True
            QApplication.instance().removeEventFilter(self)
            QTimer.singleShot(0, self._then)  # once this paint is done
        return False


def start_window(
    window: MainWindow,
    file: str | None,
    *,
    painted: Callable[[], object] | None = None,
    then: Callable[[], object] | None = None,
) -> None:
    """Show ``window`` (made with ``defer_charts=True``); right after its first paint call
    ``painted`` (only then), build its charts, open ``file`` (or the default example) in them, then call
    ``then``.

    Until the charts exist the window shows its frame and editor, with what needs the charts
    disabled (result_views.ResultsGate). A window still unpainted after
    CHARTS_AT_THE_LATEST_MS goes on without waiting for its paint.
    """
    done = False

    def after_first_paint(*, was_painted: bool = True) -> None:
        nonlocal done
        if done:
            return
        done = True
        if painted is not None and was_painted:
            painted()
        window.build_charts()
        # What start-up imported stays: the collector need not walk it again (pyqtgraph's
        # modules, the charts).
        gc.freeze()
        open_initial(window, file)
        if then is not None:
            then()

    window.show()
    window.first_paint = FirstPaint(window, after_first_paint)
    QTimer.singleShot(CHARTS_AT_THE_LATEST_MS, window, lambda: after_first_paint(was_painted=False))


#: How long after the window is ready the app starts filling numba's cache (see main).
WARM_CORE_AFTER_MS = 5000


def _warm_simulator_core() -> None:
    from swimlanes.engine.core import start_warming

    start_warming()


def main(file: str | None = None) -> int:
    """Run the desktop app; returns the exit code."""
    started = time.perf_counter()
    app = create_application()
    from swimlanes.ui.main_window import MainWindow

    # What start-up imported stays: the collector need not walk it again (a 33 ms collection
    # before the first paint).
    gc.freeze()
    window = MainWindow(defer_charts=True)
    report = os.environ.get("SWIMLANES_REPORT_FIRST_PAINT") == "1"
    times: dict[str, float] = {}

    def painted() -> None:
        # Measured from the start of main() to the end of the window's first paint.
        window.startup_seconds = time.perf_counter() - started
        times["first_paint_wall"] = time.time()

    def charts_shown() -> None:
        """The charts' first paint, with the opened file in them."""
        line = {
            "first_paint_wall": times.get("first_paint_wall"),  # None: it never painted
            "main_to_paint_s": getattr(window, "startup_seconds", None),
            "charts_paint_wall": time.time(),
            "main_to_charts_s": time.perf_counter() - started,
        }
        print(json.dumps(line), flush=True)
        window.controller.undo_stack.setClean()
        app.quit()

    def ready() -> None:
        if report:
            if window.charts.isVisible():
                window.charts_paint = FirstPaint(window.charts, charts_shown)
            else:  # a saved layout hid them: nothing more will paint
                charts_shown()
            return
        window.offer_recovery()
        # Numba's cache of the compiled simulator core, filled in the background if empty
        # (later, so that it does not compete with the first simulation).
        QTimer.singleShot(WARM_CORE_AFTER_MS, _warm_simulator_core)

    start_window(window, file, painted=painted, then=ready)
    return int(app.exec())
