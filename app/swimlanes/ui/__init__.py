"""The desktop app (PySide6 + pyqtgraph): the only package that imports Qt.

pyqtgraph's RawImageWidget tries ``from cuda.bindings import runtime`` when pyqtgraph is
imported, for an OpenGL interop the app never uses: 55 ms of start-up and GPU modules loaded
before any GPU is needed (GPU runs happen in a child process). While pyqtgraph itself is being
imported, imports of ``cuda`` fail as if it were not installed; pyqtgraph expects that.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class _NoCudaWhilePyqtgraphImports(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] != "cuda":
            return None
        pyqtgraph = sys.modules.get("pyqtgraph")
        spec = getattr(pyqtgraph, "__spec__", None)
        if spec is not None and getattr(spec, "_initializing", False):
            raise ModuleNotFoundError(f"{fullname} is not imported with pyqtgraph", name=fullname)
        return None


if "pyqtgraph" not in sys.modules and not any(
    isinstance(f, _NoCudaWhilePyqtgraphImports) for f in sys.meta_path
):
    sys.meta_path.insert(0, _NoCudaWhilePyqtgraphImports())
