"""Runs a pipeline on the GPU in a child process and streams its results back to the UI.

The executor runs in ``python -m swimlanes.gpu.child`` (a QProcess): a sticky CUDA error or a
driver crash kills only the child, and the child's GIL never starves the UI. Its stdout carries
JSON lines (see swimlanes.gpu.child) that are parsed as they arrive, never blocking the UI.
"""

from __future__ import annotations

import json
import os
import sys
from collections import deque

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from swimlanes.model.document import Pipeline
from swimlanes.model.io import pipeline_to_json

#: How long a cancelled child gets to stop and free its GPU memory before it is killed.
CANCEL_GRACE_MS = 3000
_STDERR_TAIL_LINES = 20


class GpuRunner(QObject):
    """One GPU run at a time in a child process.

    Signals: ``progress(float)``, ``partial(Timeline)`` (after each repetition),
    ``finished(Timeline)`` (the final measured timeline), ``failed(str)`` (a clear message, the
    run is over), ``cancelled()``, ``running_changed(bool)``; with ``calibrate``, first
    ``calibrating(float)`` while a host with no cached calibration is calibrated, and
    ``calibrated(dict)`` (the child's ``calibrated`` message: ``preset``, ``new``, ``origin``,
    or ``problem``). ``calibrate`` defaults to on with the real executor.
    ``executor``, ``calibrator`` ("module:function") and ``env`` (extra environment) exist for
    tests.
    """

    progress = Signal(float)
    partial = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    running_changed = Signal(bool)
    calibrating = Signal(float)
    calibrated = Signal(dict)

    def __init__(
        self,
        parent: QObject | None = None,
        *,
        executor: str | None = None,
        env: dict[str, str] | None = None,
        cancel_grace_ms: int = CANCEL_GRACE_MS,
        calibrate: bool | None = None,
        calibrator: str | None = None,
    ) -> None:
        super().__init__(parent)
        self.executor = executor
        # A fake executor in tests has no host to calibrate unless the test asks for it.
        self.calibrate = executor is None if calibrate is None else calibrate
        self.calibrator = calibrator
        self.env = dict(env or {})
        self.cancel_grace_ms = cancel_grace_ms
        self._process: QProcess | None = None
        self._buffer = b""
        self._stderr: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._outcome: str | None = None
        self._cancel_requested = False
        self._kill_timer = QTimer(self)
        self._kill_timer.setSingleShot(True)
        self._kill_timer.timeout.connect(self._kill)

    # -- public -------------------------------------------------------------------------------
    def is_running(self) -> bool:
        return self._process is not None

    def start(
        self, pipeline: Pipeline, *, repeat: int = 5, warmup: int = 1, backend: str = "auto"
    ) -> None:
        """Start a run of ``pipeline`` (ignored with a failure message if one is running)."""
        if self._process is not None:
            self.failed.emit("a GPU run is already in progress")
            return
        args = ["-m", "swimlanes.gpu.child", "--repeat", str(repeat), "--warmup", str(warmup)]
        args += ["--backend", backend]
        if self.executor:
            args += ["--executor", self.executor]
        if self.calibrate:
            args += ["--calibrate"]
            if self.calibrator:
                args += ["--calibrator", self.calibrator]
        proc = QProcess(self)
        environment = QProcessEnvironment.systemEnvironment()
        for key, value in self.env.items():
            environment.insert(key, value)
        environment.insert("PYTHONUNBUFFERED", "1")
        proc.setProcessEnvironment(environment)
        proc.readyReadStandardOutput.connect(self._read_stdout)
        proc.readyReadStandardError.connect(self._read_stderr)
        proc.finished.connect(self._on_finished)
        proc.errorOccurred.connect(self._on_error)
        self._process = proc
        self._buffer = b""
        self._stderr.clear()
        self._outcome = None
        self._cancel_requested = False
        self.running_changed.emit(True)
        proc.start(sys.executable, args)
        proc.write(pipeline_to_json(pipeline).encode("utf-8"))
        proc.closeWriteChannel()

    def cancel(self) -> None:
        """Ask the child to stop (SIGTERM); kill it if it has not exited after the grace period."""
        if self._process is None or self._cancel_requested:
            return
        self._cancel_requested = True
        self._process.terminate()
        self._kill_timer.start(self.cancel_grace_ms)

    def wait_stopped(self, msecs: int = 5000) -> None:
        """Cancel and block until the child is gone (used when the app quits)."""
        proc = self._process
        if proc is None:
            return
        self.cancel()
        if not proc.waitForFinished(msecs):
            proc.kill()
            proc.waitForFinished(1000)

    # -- child output -------------------------------------------------------------------------
    def _read_stdout(self) -> None:
        if self._process is None:
            return
        self._buffer += bytes(self._process.readAllStandardOutput().data())
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.strip():
                self._handle_line(line)

    def _read_stderr(self) -> None:
        if self._process is None:
            return
        text = bytes(self._process.readAllStandardError().data()).decode("utf-8", "replace")
        self._stderr.extend(line for line in text.splitlines() if line.strip())

    def _handle_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
            kind = message["type"]
            if kind == "progress":
                self.progress.emit(float(message["fraction"]))
            elif kind == "calibrating":
                self.calibrating.emit(float(message["fraction"]))
            elif kind == "calibrated":
                self.calibrated.emit(dict(message))
            elif kind in ("partial", "result"):
                # here: numpy comes with it, and must not delay the window's first paint
                from swimlanes.timeline.timeline import Timeline

                timeline = Timeline.from_dict(message["timeline"])
                if kind == "partial":
                    self.partial.emit(timeline)
                else:
                    self._outcome = "result"
                    self.finished.emit(timeline)
            elif kind == "error":
                self._outcome = "error"
                self.failed.emit(f"the GPU run failed: {message['message']}")
            elif kind == "cancelled":
                self._outcome = "cancelled"
        except (ValueError, KeyError, TypeError) as err:
            # A garbled line must not end the run; it is reported if the run then fails.
            self._stderr.append(f"unreadable message from the GPU process: {err}")

    def _on_finished(self, exit_code: int, exit_status: QProcess.ExitStatus) -> None:
        self._read_stdout()
        self._read_stderr()
        if self._buffer.strip():
            self._handle_line(self._buffer)
        self._kill_timer.stop()
        outcome, self._process = self._outcome, None
        if outcome == "cancelled" or (self._cancel_requested and outcome is None):
            self.cancelled.emit()
        elif outcome is None:
            self.failed.emit(self._crash_message(exit_code, exit_status))
        self.running_changed.emit(False)

    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart and self._process is not None:
            self._process = None
            self.failed.emit(f"could not start the GPU process ({sys.executable})")
            self.running_changed.emit(False)

    def _crash_message(self, exit_code: int, exit_status: QProcess.ExitStatus) -> str:
        how = (
            "it was killed by a signal"
            if exit_status == QProcess.ExitStatus.CrashExit
            else f"exit code {_signed(exit_code)}"
        )
        message = f"the GPU run crashed ({how}); your document is safe"
        if self._stderr:
            message += "\n\nLast output of the GPU process:\n" + "\n".join(self._stderr)
        return message

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()


def _signed(code: int) -> int:
    """Exit codes come back unsigned on some platforms; show -11 rather than 4294967285."""
    return code - (1 << 32) if code >= 1 << 31 else code


def child_env_with_path(*paths: str) -> dict[str, str]:
    """Extra environment that puts ``paths`` before the inherited PYTHONPATH (tests use it)."""
    current = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": os.pathsep.join([*paths, *([current] if current else [])])}
