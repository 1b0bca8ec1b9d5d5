"""Packaging, installed: an sdist, a wheel built from it, and that wheel installed into a fresh
virtual environment put the command, the resources, the licence and the Linux desktop entry,
AppStream metainfo and icon where users and desktops look for them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
APP_ID = "io.github.swimlanes.Swimlanes"
LINUX = REPO / "packaging" / "linux"
#: Where each desktop file lands under the install prefix, and its source.
DESKTOP_FILES: dict[str, Path] = {
    f"share/applications/{APP_ID}.desktop": LINUX / f"{APP_ID}.desktop",
    f"share/metainfo/{APP_ID}.metainfo.xml": LINUX / f"{APP_ID}.metainfo.xml",
    f"share/icons/hicolor/scalable/apps/{APP_ID}.svg": REPO / "resources/icons/swimlanes.svg",
}
#: What a source distribution is built from (a copy, so that nothing is written into the
#: checkout and no stale build/ output slips into the wheel).
SOURCES = ("app", "resources", "docs", "packaging", "pyproject.toml", "README.md", "LICENSE")


def _run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SWIMLANES_RESOURCES")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _setuptools_too_old() -> str | None:
    """Why the installed setuptools cannot build this project without isolation, or None."""
    try:
        import setuptools
    except ImportError:
        return "setuptools is not installed"
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    wanted = next((r for r in requires if r.startswith("setuptools")), "setuptools")
    minimum = re.search(r">=\s*(\d+)", wanted)
    have = int(setuptools.__version__.split(".")[0])
    if minimum and have < int(minimum.group(1)):
        return f"setuptools {setuptools.__version__} is older than the build's {wanted}"
    return None


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel built from the sdist (skips without build tools)."""
    reason = _setuptools_too_old()
    if reason:
        pytest.skip(f"cannot build without isolation: {reason} (install the test extra)")
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
            shutil.copytree(source, src / name, ignore=ignore)
        else:
            shutil.copy2(source, src / name)
    dist = tmp / "dist"
    backend = "from setuptools import build_meta as b; import sys; b.build_sdist(sys.argv[1])"
    out = _run([sys.executable, "-c", backend, str(dist)], cwd=src)
    assert out.returncode == 0, out.stderr[-3000:]
    sdist = next(dist.glob("swimlanes-*.tar.gz"))
    wheel_dir = tmp / "wheel"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    out = _run([*pip_wheel, "-q", "-w", str(wheel_dir), str(sdist)], cwd=tmp)
    assert out.returncode == 0, out.stderr[-3000:]
    wheel = next(wheel_dir.glob("swimlanes-*.whl"))
    venv = tmp / "venv"
    out = _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], cwd=tmp)
    if out.returncode != 0:
        pytest.skip(f"cannot create a virtual environment: {out.stderr.strip()[-300:]}")
    pip_install = [str(venv / "bin/python"), "-m", "pip", "install", "--no-deps", "--no-index"]
    out = _run([*pip_install, "-q", str(wheel)], cwd=tmp)
    assert out.returncode == 0, out.stderr[-3000:]
    return venv


def test_the_sdist_carries_the_licence_and_desktop_files(installed: Path) -> None:
    sdist = next((installed.parent / "dist").glob("swimlanes-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert "LICENSE" in names
    for suffix in ("desktop", "metainfo.xml", "svg"):
        assert f"packaging/linux/{APP_ID}.{suffix}" in names
    assert "resources/schema/pipeline.schema.json" in names


def test_desktop_entry_metainfo_and_icon_land_under_share(installed: Path) -> None:
    for target, source in DESKTOP_FILES.items():
        path = installed / target
        assert path.is_file(), f"{target} is not installed"
        assert path.read_bytes() == source.read_bytes(), target


def test_the_packaged_icon_is_the_apps_icon() -> None:
    assert (LINUX / f"{APP_ID}.svg").read_bytes() == (
        REPO / "resources/icons/swimlanes.svg"
    ).read_bytes(), "packaging/linux's icon must be a copy of resources/icons/swimlanes.svg"


def test_the_licence_is_in_the_installed_metadata(installed: Path) -> None:
    licences = list(installed.glob("lib/python*/site-packages/swimlanes-*.dist-info/licenses/*"))
    assert [p.name for p in licences] == ["LICENSE"]
    assert "MIT License" in licences[0].read_text()
    metadata = next(installed.glob("lib/python*/site-packages/swimlanes-*.dist-info/METADATA"))
    assert "License-Expression: MIT" in metadata.read_text()


def test_the_installed_command_runs_from_the_venv(installed: Path, tmp_path: Path) -> None:
    out = _run([str(installed / "bin/swimlanes"), "--help"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "usage: swimlanes" in out.stdout and "schema" in out.stdout
    where = _run(
        [str(installed / "bin/python"), "-c", "import swimlanes; print(swimlanes.__file__)"],
        cwd=tmp_path,
    )
    assert Path(where.stdout.strip()).is_relative_to(installed), where.stdout


def test_the_installed_schemas_are_the_shipped_ones(installed: Path, tmp_path: Path) -> None:
    out = _run([str(installed / "bin/swimlanes"), "schema", "pipeline"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    shipped = next(installed.glob("lib/python*/site-packages/swimlanes/_resources/schema"))
    assert out.stdout == (shipped / "pipeline.schema.json").read_text(encoding="utf-8")
    assert out.stdout == (REPO / "resources/schema/pipeline.schema.json").read_text("utf-8")
