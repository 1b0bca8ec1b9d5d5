"""Starting the app imports nothing GPU-related: numba, cuda.bindings and CUPTI cost start-up
time and are only needed by GPU runs, which happen in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

#: Top-level packages of the GPU stack. (numba-cuda's site hook ``_numba_cuda_redirector``,
#: which every Python process of this environment loads, imports none of them.)
GPU_PACKAGES = ("numba", "numba_cuda", "cuda", "cupti", "llvmlite", "cupy")

CHILD = textwrap.dedent(
    """
    import json, sys, tempfile
    from pathlib import Path
    from PySide6.QtCore import QSettings
    from swimlanes.ui.app import create_application, open_initial
    app = create_application()
    from swimlanes.ui.main_window import MainWindow
    from swimlanes.ui.settings import Settings
    folder = Path(tempfile.mkdtemp())
    settings = Settings(QSettings(str(folder / "s.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings, autosave_path=folder / "recovery.json")
    open_initial(window, None)
    window.show()
    for _ in range(20):
        app.processEvents()
    print(json.dumps(sorted(sys.modules)))
    """
)


def test_starting_the_main_window_imports_no_gpu_module(tmp_path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SWIMLANES_CONFIG_DIR=str(tmp_path))
    child = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120
    )
    assert child.returncode == 0, child.stderr
    modules = json.loads(child.stdout.strip().splitlines()[-1])
    assert "pyqtgraph" in modules and "swimlanes.ui.main_window" in modules  # it did start
    gpu = [m for m in modules if m.split(".")[0] in GPU_PACKAGES]
    assert gpu == [], f"imported at start-up: {gpu}"
