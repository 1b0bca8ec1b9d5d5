"""Where the shipped resources (examples, captured lessons, presets, measurements, icons) are.

In a source checkout they are the repository's ``resources/``; in an installed wheel or a
desktop bundle they are copied into the package as ``swimlanes/_resources``.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource_dir() -> Path:
    """The folder holding ``examples/``, ``presets/``, ``measurements/`` and ``icons/``."""
    env = os.environ.get("SWIMLANES_RESOURCES")
    if env:
        return Path(env)
    bundled = _PACKAGE / "_resources"
    if bundled.is_dir():
        return bundled
    return _PACKAGE.parent.parent / "resources"


def examples_dir() -> Path:
    return resource_dir() / "examples"


def captures_dir() -> Path:
    """Pipelines rebuilt from real programs captured on a GPU (``swimlanes capture`` of
    ``programs/``); their measured runs are in :func:`measurements_dir`."""
    return resource_dir() / "captures"


def programs_dir() -> Path:
    """The Python programs the shipped captures come from."""
    return resource_dir() / "programs"


def capture_names() -> list[str]:
    """Names of the shipped captured lessons (file stems), sorted."""
    return sorted(p.stem for p in captures_dir().glob("*.json"))


def presets_dir() -> Path:
    return resource_dir() / "presets"


def measurements_dir() -> Path:
    return resource_dir() / "measurements"


def icons_dir() -> Path:
    return resource_dir() / "icons"


def docs_dir() -> Path:
    """The user guide's Markdown pages and images (``docs/`` in a checkout; a wheel or bundle
    carries them as ``swimlanes/_docs``)."""
    bundled = _PACKAGE / "_docs"
    if bundled.is_dir():
        return bundled
    return _PACKAGE.parent.parent / "docs"


def example_names() -> list[str]:
    """Names of the shipped examples (file stems), sorted."""
    return sorted(p.stem for p in examples_dir().glob("*.json"))


def shipped_example_name(path: str | Path) -> str | None:
    """The name of the shipped example or captured lesson that ``path`` is (opened by its path,
    from recent files or the command line), else None."""
    file = Path(path).resolve()
    for folder in (examples_dir(), captures_dir()):
        if file.suffix == ".json" and file.parent == folder.resolve() and file.is_file():
            return file.stem
    return None


def example_path(name: str) -> Path:
    """A shipped example's file, or a shipped captured lesson's (``captured-...``)."""
    path = examples_dir() / f"{name}.json"
    captured = captures_dir() / f"{name}.json"
    return captured if not path.is_file() and captured.is_file() else path


def pipeline_argument(arg: str) -> Path:
    """A command's pipeline argument as a path: a file, or the name of a shipped example."""
    path = Path(arg)
    if not path.exists() and path.suffix == "" and example_path(arg).is_file():
        return example_path(arg)
    return path
