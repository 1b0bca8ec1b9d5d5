"""The app's start: the window paints before its charts exist, with what needs them disabled;
the charts follow right after, and the file named on the command line is shown in them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QLabel, QSplitter

import swimlanes.ui.app as app_module
from swimlanes.model.document import Op
from swimlanes.model.edits import InsertOps
from swimlanes.resources import example_path
from swimlanes.ui.app import create_application, start_window
from swimlanes.ui.main_window import MainWindow
from swimlanes.ui.result_views import ALWAYS_READY, PLACEHOLDER_TEXT
from swimlanes.ui.settings import Settings

EXAMPLE = "two-streams"


def deferred_window(qtbot, tmp_path: Path) -> MainWindow:
    create_application()
    settings = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    win = MainWindow(
        settings, autosave_path=tmp_path / "recovery.json", gpu_available=False, defer_charts=True
    )
    qtbot.addWidget(win, before_close_func=lambda w: w.controller.undo_stack.setClean())
    return win


def test_the_window_paints_first_and_then_shows_the_file_in_its_charts(qtbot, tmp_path) -> None:
    win = deferred_window(qtbot, tmp_path)
    at_paint: dict[str, object] = {}
    ready: list[bool] = []

    def painted() -> None:
        a = win.actions
        at_paint.update(
            charts=win.has_charts(),
            placeholder=isinstance(win.schedule_dock.widget(), QLabel)
            and win.schedule_dock.widget().text() == PLACEHOLDER_TEXT,
            open=a.open.isEnabled(),
            fit_all=a.fit_all.isEnabled(),
            export_image=a.export_image.isEnabled(),
            quit=a.quit.isEnabled(),
            device=win.toolbar.device.isEnabled(),
            examples=win.menus.examples.isEnabled(),
            visible=win.isVisible(),
        )

    start_window(win, str(example_path(EXAMPLE)), painted=painted, then=lambda: ready.append(True))
    qtbot.waitUntil(lambda: bool(ready), timeout=10000)

    assert at_paint == {
        "charts": False,
        "placeholder": True,
        "open": False,
        "fit_all": False,
        "export_image": False,
        "quit": True,
        "device": False,
        "examples": False,
        "visible": True,
    }
    # the charts replaced the placeholder, with the command line's file simulated in them
    assert win.has_charts() and isinstance(win.schedule_dock.widget(), QSplitter)
    program = win.controller.pipeline.program
    assert win.controller.path.name == f"{EXAMPLE}.json" and program
    assert win.simulated is not None and len(win.simulated) == len(program)
    assert win.charts.simulated() is win.simulated
    assert win.table.model.rowCount() == len(program)
    assert "makespan" in win.summary.text().lower()
    # everything waited for them is usable now, and what is off for its own reason stays off
    a = win.actions
    assert a.open.isEnabled() and a.fit_all.isEnabled() and a.export_image.isEnabled()
    assert win.toolbar.device.isEnabled() and win.menus.examples.isEnabled()
    assert not a.save_measurement.isEnabled()  # no measurement shown
    assert not a.delete.isEnabled()  # nothing selected
    assert not a.run_gpu.isEnabled()  # no GPU (injected)
    texts = [action.text() for action in win.menus.view.actions()]
    assert any(t.startswith("&Find in charts") for t in texts)


def test_before_the_charts_exist_disabled_actions_do_nothing_and_edits_are_kept(
    qtbot, tmp_path
) -> None:
    win = deferred_window(qtbot, tmp_path)
    win.show()
    qtbot.waitExposed(win)
    a = win.actions
    gated = [name for name in a.__dataclass_fields__ if name not in ALWAYS_READY]
    assert gated and all(not getattr(a, name).isEnabled() for name in gated)
    for name in ("fit_all", "select_all", "simulate", "play", "overlay", "compare_layout"):
        getattr(a, name).trigger()  # ignored while disabled: no chart to act on, no traceback
    assert not win.has_charts() and not a.play.isChecked() and not a.compare_layout.isChecked()
    # the editor works meanwhile; its edit is simulated once the charts exist
    op = Op("kernel", stream="default", label="early", blocks=64, threads=128, duration_us=50.0)
    assert win.controller.push(InsertOps(0, [op]))
    assert win.simulated is None
    with qtbot.waitSignal(win.charts_ready, timeout=10000):
        win.build_charts()
    assert win.simulated is not None and len(win.simulated) == 1
    assert win.charts.simulated() is win.simulated
    assert a.undo.isEnabled() and a.select_all.isEnabled()
    win.build_charts()  # once only
    assert isinstance(win.schedule_dock.widget(), QSplitter)


def test_a_window_that_never_paints_still_gets_its_charts_and_file(
    qtbot, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(app_module, "CHARTS_AT_THE_LATEST_MS", 50)
    win = deferred_window(qtbot, tmp_path)
    painted: list[bool] = []
    ready: list[bool] = []
    start_window(
        win,
        str(example_path(EXAMPLE)),
        painted=lambda: painted.append(True),
        then=lambda: ready.append(True),
    )
    win.hide()  # before its first paint: minimised, on another desktop
    qtbot.waitUntil(lambda: bool(ready), timeout=5000)
    assert painted == []  # nothing claims a paint that did not happen
    assert win.has_charts() and win.controller.path.name == f"{EXAMPLE}.json"
    assert win.simulated is not None and win.actions.open.isEnabled()


CHILD = textwrap.dedent(
    """
    import json, sys
    import swimlanes.ui.app as app_module
    from swimlanes.cli import main

    seen = {}
    start_window = app_module.start_window

    def watched_start(window, file, *, painted=None, then=None):
        def at_paint():
            seen["at_paint"] = sorted(sys.modules)
            seen["charts_at_paint"] = window.has_charts()
            painted()

        def when_ready():
            seen["after"] = sorted(sys.modules)
            seen["document"] = window.controller.path.name
            seen["simulated_ops"] = len(window.simulated) if window.simulated else -1
            then()

        start_window(window, file, painted=at_paint, then=when_ready)

    app_module.start_window = watched_start
    code = main(["gui", sys.argv[1]])
    print(json.dumps(seen))
    sys.exit(code)
    """
)

#: Imported before the first paint they would cost start-up time the frame does not need:
#: the charts' pyqtgraph, numpy and the simulator (for the simulation the charts show), and
#: anything of the GPU stack.
NOT_BEFORE_FIRST_PAINT = (
    "pyqtgraph",
    "numpy",
    "swimlanes.engine",
    "numba",
    "numba_cuda",
    "cuda",
    "cupti",
    "llvmlite",
)


def test_swimlanes_gui_imports_no_chart_numpy_or_gpu_module_before_its_first_paint(
    tmp_path,
) -> None:
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        SWIMLANES_CONFIG_DIR=str(tmp_path),
        SWIMLANES_REPORT_FIRST_PAINT="1",  # quits once the charts have painted
    )
    path = example_path(EXAMPLE)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    report, seen = (json.loads(line) for line in child.stdout.strip().splitlines()[-2:])
    early = [
        m
        for m in seen["at_paint"]
        if any(m == p or m.startswith(p + ".") for p in NOT_BEFORE_FIRST_PAINT)
    ]
    assert early == [] and seen["charts_at_paint"] is False, f"before first paint: {early}"
    assert "pyqtgraph" in seen["after"]  # the charts were built right after it
    assert seen["document"] == path.name
    assert seen["simulated_ops"] == len(json.loads(path.read_text())["program"])
    # the start-up report (bench_import.py --startup): first paint, then the charts
    assert 0 < report["main_to_paint_s"] <= report["main_to_charts_s"]
    assert report["first_paint_wall"] <= report["charts_paint_wall"]
