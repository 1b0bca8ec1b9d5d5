"""The Qt-free packages must import and run on a machine without Qt (the GPU machine)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "app" / "swimlanes"
QT_MODULES = ("PySide6", "pyqtgraph", "shiboken6")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_ui_imports_qt() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ("ui", "commands"):
            continue
        if _imported_modules(path) & set(QT_MODULES):
            offenders.append(str(rel))
    assert offenders == [], f"Qt imported outside ui/: {offenders}"


def test_qt_free_packages_import_with_qt_blocked() -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {QT_MODULES!r}:\n"
        "            raise ImportError('Qt is blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import swimlanes.model, swimlanes.engine, swimlanes.timeline, swimlanes.gpu\n"
        "import swimlanes.cli\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
