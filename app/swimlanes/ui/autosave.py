"""Crash recovery: the unsaved document is written to a recovery file every 30 s while dirty.

The file lives at QStandardPaths' AppDataLocation ``/recovery.json``. It is removed when the
document is saved clean or the app quits normally, so finding one at start-up means the last
session ended without saving (a crash, a kill, a power cut) and the app offers to restore it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QStandardPaths, QTimer

from swimlanes.model.document import Pipeline
from swimlanes.model.io import dump_json_atomic
from swimlanes.model.validate import PipelineError, Problem, pipeline_from_dict

RECOVERY_FORMAT = "swimlanes-recovery"
RECOVERY_VERSION = 1
AUTOSAVE_INTERVAL_MS = 30_000


def recovery_path() -> Path:
    """Where the recovery file is written (the folder may not exist yet)."""
    folder = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(folder) / "recovery.json"


def write_recovery(pipeline: Pipeline, original_path: str | None, path: Path | None = None) -> Path:
    """Write the recovery file atomically; returns its path."""
    target = path or recovery_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {
        "format": RECOVERY_FORMAT,
        "version": RECOVERY_VERSION,
        "saved_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "original_path": original_path,
        "pipeline": pipeline.to_dict(),
    }
    dump_json_atomic(data, target)
    return target


def read_recovery(path: Path | None = None) -> tuple[Pipeline, str | None, str]:
    """The recovered pipeline, the file it came from (or None) and when it was saved.

    Raises PipelineError when the recovery file is unreadable.
    """
    source = path or recovery_path()
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PipelineError([Problem("", f"cannot read the recovery file: {err}")]) from None
    if not isinstance(data, dict) or data.get("format") != RECOVERY_FORMAT:
        raise PipelineError([Problem("", "the recovery file is not a Swimlanes recovery file")])
    pipeline = pipeline_from_dict(data.get("pipeline"))
    original = data.get("original_path")
    return pipeline, original if isinstance(original, str) else None, str(data.get("saved_at"))


def discard_recovery(path: Path | None = None) -> None:
    (path or recovery_path()).unlink(missing_ok=True)


def has_recovery(path: Path | None = None) -> bool:
    return (path or recovery_path()).is_file()


class Autosaver(QObject):
    """Writes the controller's document to the recovery file every ``interval_ms`` while dirty.

    ``controller`` needs ``pipeline``, ``path``, ``is_dirty`` and an ``undo_stack`` whose
    ``cleanChanged`` tells when the document was saved (or undone back to its saved state).
    """

    def __init__(
        self,
        controller: Any,
        *,
        interval_ms: int = AUTOSAVE_INTERVAL_MS,
        path: Path | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.controller = controller
        self.path = path or recovery_path()
        self.last_error: str | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.save_now)
        self._timer.start()
        controller.clean_changed.connect(self._on_clean_changed)

    def save_now(self) -> bool:
        """Write the recovery file if the document has unsaved changes; True if written."""
        if not _is_dirty(self.controller):
            return False
        try:
            original = self.controller.path
            write_recovery(self.controller.pipeline, str(original) if original else None, self.path)
        except OSError as err:
            # A full disk must not interrupt editing; the next tick tries again.
            self.last_error = str(err)
            return False
        self.last_error = None
        return True

    def discard(self) -> None:
        """Remove the recovery file (clean save, normal quit, or the user declined to restore)."""
        discard_recovery(self.path)

    def stop(self) -> None:
        self._timer.stop()

    def _on_clean_changed(self, clean: bool) -> None:
        if clean:
            self.discard()


def _is_dirty(controller: Any) -> bool:
    dirty = controller.is_dirty
    return bool(dirty() if callable(dirty) else dirty)
