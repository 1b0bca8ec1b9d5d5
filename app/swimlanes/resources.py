"""Where the shipped resources (examples, presets, measurements, icons) are.

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


def example_path(name: str) -> Path:
    return examples_dir() / f"{name}.json"


def pipeline_argument(arg: str) -> Path:
    """A command's pipeline argument as a path: a file, or the name of a shipped example."""
    path = Path(arg)
    if not path.exists() and path.suffix == "" and example_path(arg).is_file():
        return example_path(arg)
    return path
