"""Shared test set-up: headless Qt, and the `gpu` marker skipped where no CUDA GPU exists."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Calibrations are cached in the user's config folder: tests (and the child processes they
# start, which inherit this) get a fresh one, never the real one.
os.environ["SWIMLANES_CONFIG_DIR"] = tempfile.mkdtemp(prefix="swimlanes-test-config-")
atexit.register(shutil.rmtree, os.environ["SWIMLANES_CONFIG_DIR"], ignore_errors=True)

REPO = Path(__file__).resolve().parent.parent
SHARED_TRACES = REPO.parent / "shared" / "traces"


def _has_gpu() -> bool:
    from swimlanes.gpu import cuda_available

    return cuda_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    try:
        has_gpu = _has_gpu()
    except Exception:  # noqa: BLE001 - any failure to probe means "no GPU here"
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _collect_cycles_on_the_main_thread() -> Iterator[None]:
    """The app collects cycles from a timer on the UI thread only (ui.main_thread_gc); tests
    seldom run the event loop long enough for that timer, so collect between tests here."""
    yield
    if "PySide6.QtWidgets" not in sys.modules:
        return
    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is None:
        return
    from swimlanes.ui.main_thread_gc import install_main_thread_gc

    install_main_thread_gc().collect_if_due()
