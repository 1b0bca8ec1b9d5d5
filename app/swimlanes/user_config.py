"""Where Swimlanes keeps the user's own files: cached presets and calibration records, and the
app's preferences. Qt-free and light (the app reads it before its first paint)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: Overrides the user config folder (tests, several users' setups on one account).
CONFIG_DIR_VARIABLE = "SWIMLANES_CONFIG_DIR"


def config_dir() -> Path:
    """Swimlanes' user config folder (not created here): ``$SWIMLANES_CONFIG_DIR`` when set,
    else the platform's user config folder's ``swimlanes``."""
    env = os.environ.get(CONFIG_DIR_VARIABLE)
    if env:
        return Path(env)
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return base / "swimlanes"


def settings_file() -> Path | None:
    """The app's preferences file when ``$SWIMLANES_CONFIG_DIR`` is set (an INI file in that
    folder, so that the folder holds all of a user's state); else None: the platform's own
    store (the registry, a plist, ~/.config/Swimlanes)."""
    env = os.environ.get(CONFIG_DIR_VARIABLE)
    return Path(env) / "settings.ini" if env else None
