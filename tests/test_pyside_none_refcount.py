"""Regression guard: PySide6 6.12.0 on Python < 3.12 drops a reference to None on every call of
a method that returns nothing, until the interpreter aborts in none_dealloc."""

from __future__ import annotations

import sys

import pytest

QtCore = pytest.importorskip("PySide6.QtCore")

CALLS = 1000


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="None is immortal from Python 3.12")
def test_void_methods_do_not_steal_references_to_none() -> None:
    rect = QtCore.QRectF()
    rect.setWidth(1.0)  # warm up any one-time caches before counting
    before = sys.getrefcount(None)
    for _ in range(CALLS):
        rect.setWidth(1.0)
    after = sys.getrefcount(None)
    # Unrelated code may take or drop a handful of references meanwhile; the bug drops ~1,000.
    assert before - after < 50, f"None lost {before - after} references in {CALLS} calls"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 is immune")
def test_installed_pyside_is_not_the_broken_release_on_old_python() -> None:
    import PySide6

    major, minor = (int(x) for x in PySide6.__version__.split(".")[:2])
    assert (major, minor) != (6, 12), (
        f"PySide6 {PySide6.__version__} corrupts None's refcount on Python "
        f"{sys.version_info.major}.{sys.version_info.minor}; install < 6.12"
    )
