"""Crash recovery: a few seconds after each edit, the unsaved document is written to a recovery
file (in a worker thread).

The file lives at QStandardPaths' AppDataLocation ``/recovery.json``. It is removed when the
document is saved clean or the app quits normally, so finding one at start-up means the last
session ended without saving (a crash, a kill, a power cut) and the app offers to restore it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QStandardPaths, QTimer, Signal

from swimlanes.model.document import Pipeline
from swimlanes.model.io import dump_json_atomic, parse_json
from swimlanes.model.validate import PipelineError, Problem, pipeline_from_dict
from swimlanes.ui.workers import TaskRunner

RECOVERY_FORMAT = "swimlanes-recovery"
RECOVERY_VERSION = 1
#: How long after an edit its recovery copy is written (edits meanwhile go with it).
AUTOSAVE_DELAY_MS = 2_000
#: After a failed write (a full disk), the next try.
RETRY_AFTER_FAILURE_MS = 15_000


def recovery_path() -> Path:
    """Where the recovery file is written (the folder may not exist yet)."""
    folder = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(folder) / "recovery.json"


def recovery_document(pipeline: Pipeline, original_path: str | None) -> dict[str, Any]:
    """What the recovery file holds: a copy of the document as it is now."""
    return {
        "format": RECOVERY_FORMAT,
        "version": RECOVERY_VERSION,
        "saved_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "original_path": original_path,
        "pipeline": pipeline.to_dict(),
    }


def write_recovery(pipeline: Pipeline, original_path: str | None, path: Path | None = None) -> Path:
    """Write the recovery file atomically; returns its path."""
    target = path or recovery_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    dump_json_atomic(recovery_document(pipeline, original_path), target)
    return target


def read_recovery(path: Path | None = None) -> tuple[Pipeline, str | None, str]:
    """The recovered pipeline, the file it came from (or None) and when it was saved.

    Raises PipelineError when the recovery file is unreadable.
    """
    source = path or recovery_path()
    try:
        data = parse_json(source.read_text(encoding="utf-8"))  # the pipeline files' limits
    except (OSError, UnicodeDecodeError) as err:
        raise PipelineError([Problem("", f"cannot read the recovery file: {err}")]) from None
    except PipelineError as err:
        problems = "; ".join(str(p) for p in err.problems)
        raise PipelineError([Problem("", f"cannot read the recovery file: {problems}")]) from None
    if not isinstance(data, dict) or data.get("format") != RECOVERY_FORMAT:
        raise PipelineError([Problem("", "the recovery file is not a Swimlanes recovery file")])
    pipeline = pipeline_from_dict(data.get("pipeline"))
    original = data.get("original_path")
    return pipeline, original if isinstance(original, str) else None, str(data.get("saved_at"))


def discard_recovery(path: Path | None = None) -> None:
    """Remove the recovery file if there is one (never raises: it runs while closing)."""
    # no folder there (the autosave never worked) or not ours to remove: nothing is lost
    with contextlib.suppress(OSError):
        (path or recovery_path()).unlink(missing_ok=True)


def has_recovery(path: Path | None = None) -> bool:
    return (path or recovery_path()).is_file()


class _RecoveryWriter:
    """Writes recovery data in a worker thread; a discard wins over a write still in flight.

    Each write carries the generation it was started in and lands only while that generation
    is current, under the same lock :meth:`discard` takes, so a document saved clean while a
    write was running never gets a recovery file back.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._generation = 0

    def start_write(self) -> int:
        with self._lock:
            self._generation += 1
            return self._generation

    def write(self, generation: int, data: dict[str, Any]) -> bool:
        with self._lock:
            if generation != self._generation:
                return False
            self.path.parent.mkdir(parents=True, exist_ok=True)
            dump_json_atomic(data, self.path)
            return True

    def discard(self) -> None:
        with self._lock:
            self._generation += 1
            discard_recovery(self.path)


class Autosaver(QObject):
    """Writes the controller's document to the recovery file soon after every edit.

    The first edit after a save starts a ``interval_ms`` countdown (edits meanwhile go with
    it); then the document is copied on the UI thread and written in a worker thread, so a
    slow or full disk never stalls editing. A failed write is reported through ``failed``
    (and retried) instead of being lost; ``saved`` follows each write that landed.

    ``controller`` needs ``pipeline``, ``path``, ``is_dirty`` and the ``changed`` and
    ``clean_changed`` signals of the DocumentController.
    """

    saved = Signal(str)
    failed = Signal(str)

    def __init__(
        self,
        controller: Any,
        *,
        interval_ms: int = AUTOSAVE_DELAY_MS,
        path: Path | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.controller = controller
        self.path = path or recovery_path()
        self.last_error: str | None = None
        self._writer = _RecoveryWriter(self.path)
        self._tasks = TaskRunner(self)
        self._tasks.finished.connect(self._on_written)
        self._tasks.failed.connect(self._on_write_failed)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.save_soon_now)
        self._stopped = False
        controller.changed.connect(self._on_changed)
        controller.clean_changed.connect(self._on_clean_changed)

    def save_now(self) -> bool:
        """Write the recovery file at once, on this thread, if the document has unsaved
        changes; True if written."""
        if not _is_dirty(self.controller):
            return False
        try:
            self._writer.write(self._writer.start_write(), self._snapshot())
        except OSError as err:
            self._report_failure(err)
            return False
        self._report_saved()
        return True

    def save_soon_now(self) -> None:
        """Copy the document now and write it in the worker (what the countdown does)."""
        if self._stopped or not _is_dirty(self.controller):
            return
        data, writer = self._snapshot(), self._writer
        generation = writer.start_write()
        self._tasks.start(lambda _progress, _cancel: writer.write(generation, data))

    def is_writing(self) -> bool:
        return self._tasks.is_busy()

    def discard(self) -> None:
        """Remove the recovery file (clean save, normal quit, or the user declined to restore)."""
        self._writer.discard()

    def stop(self) -> None:
        """No more writes (the app is closing); waits for one in flight."""
        self._stopped = True
        self._timer.stop()
        self._tasks.shutdown()

    def _snapshot(self) -> dict[str, Any]:
        original = self.controller.path
        return recovery_document(self.controller.pipeline, str(original) if original else None)

    def _on_changed(self) -> None:
        if not self._stopped and not self._timer.isActive() and _is_dirty(self.controller):
            self._timer.start()

    def _on_clean_changed(self, clean: bool) -> None:
        if clean:
            self._timer.stop()
            self.discard()

    def _on_written(self, landed: object) -> None:
        if landed:
            self._report_saved()

    def _on_write_failed(self, err: object) -> None:
        self._report_failure(err)
        if not self._stopped:
            self._timer.start(RETRY_AFTER_FAILURE_MS)  # a full disk may have room later

    def _report_saved(self) -> None:
        self.last_error = None
        self.saved.emit(str(self.path))

    def _report_failure(self, err: object) -> None:
        self.last_error = str(err) or type(err).__name__
        self.failed.emit(self.last_error)


def _is_dirty(controller: Any) -> bool:
    dirty = controller.is_dirty
    return bool(dirty() if callable(dirty) else dirty)
