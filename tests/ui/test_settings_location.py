"""The app's preferences follow ``$SWIMLANES_CONFIG_DIR`` as its cached presets do, so that a
user (or a test) who points Swimlanes at a folder finds all of its state there and none in the
platform's store."""

from __future__ import annotations

from pathlib import Path

import pytest

from swimlanes.ui.settings import Settings


def test_preferences_go_to_the_config_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    recent = tmp_path / "two-streams.json"
    recent.write_text("{}", encoding="utf-8")
    monkeypatch.setenv("SWIMLANES_CONFIG_DIR", str(tmp_path / "config"))
    settings = Settings()
    settings.add_recent_file(str(recent))
    settings.q.sync()
    assert (tmp_path / "config" / "settings.ini").is_file()
    assert Settings().recent_files() == [str(recent)]
    monkeypatch.setenv("SWIMLANES_CONFIG_DIR", str(tmp_path / "other"))
    assert Settings().recent_files() == []
