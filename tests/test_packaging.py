"""Packaging: the wheel carries the resources and the command; desktop metadata is valid."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_pyproject_lists_every_package() -> None:
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(REPO / "app").parts)
        for p in (REPO / "app").rglob("__init__.py")
    }
    assert found | {"swimlanes._resources", "swimlanes._docs"} == listed


def test_pyside6_612_is_kept_off_python_311() -> None:
    deps = _pyproject()["project"]["dependencies"]
    pyside = [d for d in deps if d.lower().startswith("pyside6")]
    assert any("<6.12" in d and "python_version < '3.12'" in d for d in pyside), pyside


def test_desktop_entry_and_metainfo_are_well_formed() -> None:
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # keys are case-sensitive
    entry.read(REPO / "packaging/linux/io.github.swimlanes.Swimlanes.desktop")
    section = entry["Desktop Entry"]
    assert section["Type"] == "Application"
    assert section["Exec"].startswith("swimlanes ")
    assert section["Categories"].endswith(";")
    root = ET.parse(REPO / "packaging/linux/io.github.swimlanes.Swimlanes.metainfo.xml").getroot()
    assert root.findtext("id") == "io.github.swimlanes.Swimlanes"
    assert root.find("launchable").text == "io.github.swimlanes.Swimlanes.desktop"


DESKTOP_ENTRY = REPO / "packaging/linux/io.github.swimlanes.Swimlanes.desktop"
METAINFO = REPO / "packaging/linux/io.github.swimlanes.Swimlanes.metainfo.xml"


def _validator(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (Debian: desktop-file-utils, appstream)")
    return path


def test_desktop_entry_passes_desktop_file_validate() -> None:
    out = subprocess.run(
        [_validator("desktop-file-validate"), str(DESKTOP_ENTRY)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Errors fail it (exit code), and so do warnings and hints (an app listed twice in menus).
    assert out.returncode == 0 and out.stdout.strip() == "", out.stdout + out.stderr


def test_metainfo_passes_appstreamcli_validate() -> None:
    out = subprocess.run(
        [_validator("appstreamcli"), "validate", "--no-net", "--explain", str(METAINFO)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    # Pedantic notes may stay (the reverse-DNS id keeps its capital letter); nothing worse.
    assert not re.search(r"^[EWI]: ", out.stdout, re.MULTILINE), out.stdout


def test_desktop_entry_icon_and_metainfo_name_the_app_id() -> None:
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str
    entry.read(DESKTOP_ENTRY)
    app_id = ET.parse(METAINFO).getroot().findtext("id")
    assert entry["Desktop Entry"]["Icon"] == app_id
    assert (REPO / f"packaging/linux/{app_id}.svg").is_file()
    assert DESKTOP_ENTRY.name == f"{app_id}.desktop" and METAINFO.name == f"{app_id}.metainfo.xml"


def test_wheel_contains_resources_and_console_script(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0 and "Could not find a version" in out.stderr:
        pytest.skip("build back end not reachable from this machine")
    assert out.returncode == 0, out.stderr
    wheel = next(tmp_path.glob("swimlanes-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    examples = [n for n in names if n.startswith("swimlanes/_resources/examples/")]
    assert len(examples) >= 10, examples
    assert "swimlanes/_resources/icons/swimlanes.svg" in names
    # The guide's pages ship; the scripts that draw its figures (docs/scripts) do not.
    assert "swimlanes/_docs/simulating.md" in names
    assert not [n for n in names if n.startswith("swimlanes/_docs/") and n.endswith(".py")]
    entry_points = (
        zipfile.ZipFile(wheel)
        .read(next(n for n in names if n.endswith("entry_points.txt")))
        .decode()
    )
    assert "swimlanes = swimlanes.cli:main" in entry_points


def test_bundle_spec_imports_every_command_and_carries_the_desktop_files() -> None:
    """cli.py imports commands by name, which PyInstaller cannot follow: the spec lists them."""
    spec = (REPO / "packaging/swimlanes.spec").read_text()
    listed = set(re.findall(r'"swimlanes\.commands\.(\w+)"', spec))
    found = {p.stem for p in (REPO / "app/swimlanes/commands").glob("*.py")} - {"__init__"}
    assert found <= listed, f"missing from the spec's hiddenimports: {sorted(found - listed)}"
    for folder in ("share/applications", "share/metainfo", "share/icons/hicolor/scalable/apps"):
        assert f'"{folder}"' in spec
