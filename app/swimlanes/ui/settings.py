"""Persistent preferences (QSettings): window layout, recent files, last device, GPU repetitions,
the code view's language."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from swimlanes.user_config import settings_file

ORGANIZATION = "Swimlanes"
APPLICATION = "Swimlanes"
MAX_RECENT_FILES = 10


def _store() -> QSettings:
    """The platform's store, or an INI file in ``$SWIMLANES_CONFIG_DIR`` when that is set."""
    path = settings_file()
    if path is None:
        return QSettings(ORGANIZATION, APPLICATION)
    return QSettings(str(path), QSettings.Format.IniFormat)


class Settings:
    """Typed access to the app's QSettings (``qsettings`` lets tests pass their own store)."""

    def __init__(self, qsettings: QSettings | None = None) -> None:
        self.q = qsettings or _store()

    # -- window -------------------------------------------------------------------------------
    def window_geometry(self) -> QByteArray | None:
        return _bytes(self.q.value("window/geometry"))

    def window_state(self) -> QByteArray | None:
        return _bytes(self.q.value("window/state"))

    def save_window(self, geometry: QByteArray, state: QByteArray) -> None:
        self.q.setValue("window/geometry", geometry)
        self.q.setValue("window/state", state)

    # -- recent files -------------------------------------------------------------------------
    def recent_files(self) -> list[str]:
        """Most recent first, at most MAX_RECENT_FILES, only files that still exist."""
        value = self.q.value("recent/files", [])
        if isinstance(value, str):  # QSettings returns a one-item list as a bare string
            value = [value]
        files = [str(v) for v in (value or []) if v]
        return [f for f in files if Path(f).is_file()][:MAX_RECENT_FILES]

    def add_recent_file(self, path: str) -> list[str]:
        full = str(Path(path).resolve())
        files = [full, *[f for f in self.recent_files() if f != full]][:MAX_RECENT_FILES]
        self.q.setValue("recent/files", files)
        return files

    def clear_recent_files(self) -> None:
        self.q.setValue("recent/files", [])

    # -- simple values ------------------------------------------------------------------------
    def last_device(self, default: str = "h200") -> str:
        return str(self.q.value("simulate/device", default) or default)

    def set_last_device(self, name: str) -> None:
        self.q.setValue("simulate/device", name)

    def gpu_repeat(self, default: int = 5) -> int:
        try:
            return max(1, int(self.q.value("gpu/repeat", default)))
        except (TypeError, ValueError):
            return default

    def set_gpu_repeat(self, n: int) -> None:
        self.q.setValue("gpu/repeat", int(n))

    def code_language(self, default: str = "python") -> str:
        """The code view's language (a key of swimlanes.codegen.LANGUAGES)."""
        return str(self.q.value("code/language", default) or default)

    def set_code_language(self, language: str) -> None:
        self.q.setValue("code/language", language)

    def sync(self) -> None:
        self.q.sync()


def _bytes(value: object) -> QByteArray | None:
    if isinstance(value, QByteArray) and not value.isEmpty():
        return value
    if isinstance(value, bytes | bytearray) and value:
        return QByteArray(bytes(value))
    return None
