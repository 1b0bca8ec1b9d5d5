"""Qt objects torn down by the garbage collector, or after an in-process export, must not crash.

Each case runs in a child interpreter: a crash there fails the test instead of killing the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_editor_tests_survive_collection_after_hypothesis_tests() -> None:
    """The reproduction of a crash in QUndoStack::clear during garbage collection.

    With the undo stack's Python wrapper collectable, this pair of test files segfaulted at
    every run: the collector freed the stack's wrapper (and with it the commands) before Qt
    destroyed the controller. A plain script does not reproduce the collector's order.
    """
    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
         "tests/timeline/test_metrics.py", "tests/ui/test_editor_examples.py"],
        capture_output=True, text=True, timeout=300, env=env, cwd=repo,
    )  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-2000:]


def test_widgets_can_be_made_after_an_in_process_export(tmp_path) -> None:
    out = _run(
        f"""
        from swimlanes.cli import main
        rc = main(["export", "resources/examples/two-streams.json",
                   "-o", {str(tmp_path / "x.png")!r}, "--width", "400"])
        from PySide6.QtWidgets import QWidget
        w = QWidget()
        print(rc)
        """
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "0"


def test_qt_objects_in_cycles_are_not_destroyed_by_a_worker_thread() -> None:
    """The full suite's random segfault, made certain: editors (widgets, a document controller
    and its undo stack, all owned by Python) sit in reference cycles while a TaskRunner's task
    allocates enough to trip the garbage collector. Collected on the worker, their destructors
    ran off the UI thread and the next event delivery crashed (5 of 5 runs before the fix)."""
    out = _run(
        """
        import gc, sys, time
        sys.path.insert(0, "tests/ui")
        from PySide6.QtWidgets import QApplication
        app = QApplication([])
        from test_editor_helpers import Editor, sample
        from swimlanes.model import Op
        from swimlanes.model.edits import InsertOps
        from swimlanes.ui.workers import TaskRunner

        class Cycle:
            pass

        for _ in range(20):
            c = Cycle()
            c.self, c.editor = c, Editor(sample())
            c.editor.show()
            c.editor.controller.push(InsertOps(0, [Op("host", duration_us=1.0)]))
            app.processEvents()
            c.editor.close()
            del c
        runner = TaskRunner()
        done = []
        runner.finished.connect(done.append)
        runner.start(lambda progress, cancel: len([[i] for i in range(300_000)]))
        started = time.monotonic()
        while not done and time.monotonic() - started < 30:
            app.processEvents()
        for _ in range(200):
            app.processEvents()
        freed = gc.collect()  # on the UI thread, where Qt wants them destroyed
        for _ in range(50):
            app.processEvents()
        print(done, freed > 0)
        """
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[300000] True"
