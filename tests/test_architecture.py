"""Architecture: the Qt-free packages import and run without Qt (the GPU machine), and the
import-layer contract holds: packages import downwards only (LAYERS), no modules import each
other in a cycle, and commands never import other commands."""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
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
        "import swimlanes.analysis, swimlanes.timeline.formats.io\n"
        "import swimlanes.services.simulation, swimlanes.services.runs\n"
        "import swimlanes.services.band_output, swimlanes.services.measuring\n"
        "import swimlanes.cli\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- the import-layer contract --------------------------------------------------------------------
#: The package's layers, lowest first. A module may import modules of a lower layer and of its
#: own package; packages that share a layer are independent of each other. Every package under
#: app/swimlanes must be listed ("swimlanes" is the root package's own __init__).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("swimlanes", "units", "resources", "user_config"),  # version, time units, resource paths
    ("model",),  # the pipeline document
    ("timeline", "codegen"),  # results and their files; code export
    ("engine",),  # the simulator and device presets
    ("analysis", "gpu"),  # insights and what-ifs; the GPU executor and calibration
    ("services",),  # what the commands, the app and the docs scripts share
    ("ui",),  # the desktop app (the only Qt importer)
    ("commands",),  # one CLI command each (export renders images through ui)
    ("cli",),  # argument parsing and dispatch
    ("__main__",),  # ``python -m swimlanes``
)
LAYER_OF: dict[str, int] = {unit: i for i, units in enumerate(LAYERS) for unit in units}


@dataclass(frozen=True)
class Import:
    """One import statement's target inside swimlanes, as the module's source spells it."""

    module: str  # the importing module
    target: str  # the imported swimlanes module (a submodule where ``from pkg import mod``)
    line: int
    type_only: bool  # under ``if TYPE_CHECKING:``: never executed

    def __str__(self) -> str:
        where = " (under TYPE_CHECKING)" if self.type_only else ""
        return f"{self.module} line {self.line} imports {self.target}{where}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement anywhere (module level, in functions, classes, try blocks), with
    whether it sits under ``if TYPE_CHECKING:``."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, type_only: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append((node, type_only))
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_only)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, type_only)

    visit(tree, False)
    return found


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The swimlanes modules an import statement names, relative imports resolved."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "swimlanes"]
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    if base.split(".")[0] != "swimlanes":
        return []
    return [f"{base}.{a.name}" for a in node.names] or [base]


def collect_imports() -> list[Import]:
    """Every import of a swimlanes module by a swimlanes module, function-level and relative
    ones included; ``from pkg import name`` counts as importing ``pkg.name`` when that is a
    module, else ``pkg``."""
    modules = _all_modules()
    imports = []
    for module, path in sorted(modules.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, type_only in _import_nodes(tree):
            for target in _targets(module, path.name == "__init__.py", node):
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target != module:
                    imports.append(Import(module, target, node.lineno, type_only))
    return list(dict.fromkeys(imports))  # one per statement and target


def unit_of(module: str) -> str:
    """The LAYERS entry a module belongs to: its top-level package or module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_every_package_has_a_layer() -> None:
    units = {unit_of(m) for m in _all_modules()}
    missing = sorted(units - set(LAYER_OF))
    assert missing == [], f"add these to LAYERS in tests/test_architecture.py: {missing}"


def test_nothing_imports_a_higher_layer_or_a_sibling_package() -> None:
    offenders = []
    for imp in collect_imports():
        own, other = unit_of(imp.module), unit_of(imp.target)
        if own == other or own not in LAYER_OF or other not in LAYER_OF:
            continue
        if LAYER_OF[other] > LAYER_OF[own]:
            offenders.append(f"{imp}: {other} is above {own}")
        elif LAYER_OF[other] == LAYER_OF[own]:
            offenders.append(f"{imp}: {other} and {own} share a layer and stay independent")
    assert offenders == [], "imports against the layer order:\n" + "\n".join(offenders)


def import_cycles(imports: list[Import]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.module, set()).add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(v: str) -> None:  # recursion depth is bounded by the module count
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return groups


#: Import cycles that exist today, each with the change that removes it. Any other cycle fails
#: the test, and so does an entry whose cycle is gone (delete the entry then): the list only
#: shrinks.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def test_no_import_cycles() -> None:
    """Module-level and function-level imports together form no cycle. (Imports under ``if
    TYPE_CHECKING:`` never run, so a type-only reference back to a caller is not a cycle.)"""
    runtime = [imp for imp in collect_imports() if not imp.type_only]
    groups = import_cycles(runtime)
    problems = []
    for group in groups:
        if frozenset(group) in KNOWN_CYCLES:
            continue
        inside = [str(imp) for imp in runtime if imp.module in group and imp.target in group]
        problems.append("cycle between " + ", ".join(group) + ":\n  " + "\n  ".join(inside))
    gone = set(KNOWN_CYCLES) - {frozenset(group) for group in groups}
    problems += [f"no longer a cycle, delete it from KNOWN_CYCLES: {sorted(g)}" for g in gone]
    assert problems == [], "\n".join(problems)


def test_commands_never_import_other_commands() -> None:
    """Shared logic lives in swimlanes.services; cli.py alone dispatches to the commands."""
    offenders = [
        str(imp)
        for imp in collect_imports()
        if unit_of(imp.module) == "commands" and unit_of(imp.target) == "commands"
    ]
    assert offenders == [], "commands importing commands:\n" + "\n".join(offenders)


def test_the_contract_sees_hidden_imports(tmp_path: Path) -> None:
    """The collector finds what a cycle or layer breach hides behind: function-level,
    relative, TYPE_CHECKING and ``from package import module`` imports."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import io\n"
        "if TYPE_CHECKING:\n"
        "    from swimlanes.engine.presets import DevicePreset\n"
        "def f():\n"
        "    from ...engine import simulate\n"
    )
    tree = ast.parse(source)
    found = [
        (target, type_only)
        for node, type_only in _import_nodes(tree)
        for target in _targets("swimlanes.timeline.formats.x", False, node)
    ]
    assert found == [
        ("swimlanes.timeline.formats.io", False),
        ("swimlanes.engine.presets.DevicePreset", True),
        ("swimlanes.engine.simulate", False),
    ]
    cycle = [Import("a", "b", 1, False), Import("b", "c", 2, False), Import("c", "a", 3, False)]
    assert import_cycles(cycle) == [["a", "b", "c"]]
    assert import_cycles(cycle[:2]) == []
