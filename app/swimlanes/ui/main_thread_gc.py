"""Python's cyclic garbage collector, run on the UI thread only.

Python collects reference cycles on whichever thread happens to allocate past the threshold.
When that is a worker thread (a trace being parsed, a large simulation) and the cycle holds a
Qt object that Python owns (a closed dialog, a document controller without a parent), the
object's C++ destructor runs on the worker: a QWidget or QUndoStack destroyed off its own
thread emits signals and stops timers from the wrong thread, and the UI thread crashes later
delivering an event to it. So automatic collection is switched off and this collector runs
the same generational thresholds from a timer on the UI thread (pyqtgraph's GarbageCollector
recipe), where every Qt object of this app lives.
"""

from __future__ import annotations

import gc
import threading

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, QTimer

#: How often the UI thread looks at the collector's counts.
CHECK_INTERVAL_MS = 500

_installed: MainThreadCollector | None = None


class MainThreadCollector(QObject):
    """Disables automatic garbage collection and collects on the UI thread instead.

    :meth:`collect_if_due` applies the thresholds Python would have applied (``gc.get_threshold``)
    so memory use stays what it would be; a timer calls it while the event loop runs, and code
    that runs without an event loop (a test harness) may call it directly.
    """

    def __init__(self, parent: QObject | None = None, interval_ms: int = CHECK_INTERVAL_MS):
        super().__init__(parent)
        self._thread = threading.get_ident()
        self._thresholds = gc.get_threshold()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.collect_if_due)
        self._timer.start()

    def collect_if_due(self) -> int:
        """Collect the generations whose counts passed their thresholds; objects freed.

        Only on the thread that made the collector: anywhere else it does nothing.
        """
        if threading.get_ident() != self._thread:
            return 0
        counts = gc.get_count()
        generation = -1
        for level in range(3):
            if counts[level] <= self._thresholds[level]:
                break
            generation = level
        return gc.collect(generation) if generation >= 0 else 0


def install_main_thread_gc() -> MainThreadCollector:
    """Make the UI thread the only one that collects cycles (once per process; idempotent).

    Call it from the UI thread once the QCoreApplication exists; the collector is its child.
    """
    global _installed
    app = QCoreApplication.instance()
    if app is None:
        raise RuntimeError("create the QApplication before installing the collector")
    if _installed is None or not shiboken6.isValid(_installed) or _installed.parent() is not app:
        _installed = MainThreadCollector(app)
    gc.disable()  # someone may have switched it back on
    return _installed
