"""Child-process entry point for GPU runs started by the desktop app.

``python -m swimlanes.gpu.child [--repeat N] [--warmup N] [--backend B] [--executor MOD:FUNC]
[--calibrate [--calibrator MOD:FUNC]]``

The app runs the executor in this separate process so that a sticky CUDA error, a driver crash
or a long stretch holding the GIL can never take down the window or the user's unsaved document.

Protocol: the pipeline document (JSON) arrives on stdin. Each message goes to stdout as one JSON
object per line:

- ``{"type": "calibrating", "fraction": 0.4}`` (with ``--calibrate``, while this host is being
  calibrated before its first run; see swimlanes.gpu.auto_calibrate)
- ``{"type": "calibrated", "new": true, "preset": {id, path, calibrated_at, host},
  "origin": "calibrated ... on host ..."}`` (with ``--calibrate``: the preset the run is
  recorded against, in the result's ``meta["calibration"]``), or ``{"type": "calibrated",
  "problem": "..."}`` when the cache could not be written (the run goes on)
- ``{"type": "progress", "fraction": 0.25}``
- ``{"type": "partial", "timeline": {...}}`` (a ``swimlanes-timeline`` dict, after a repetition)
- ``{"type": "result", "timeline": {...}}`` (exit code 0)
- ``{"type": "cancelled"}`` (exit code 3: SIGTERM asked the executor to stop)
- ``{"type": "error", "message": "..."}`` (exit code 1)

Anything else the executor or its libraries print goes to stderr, because the protocol keeps the
original stdout for itself. SIGTERM sets a flag that the executor's ``cancel`` callback reports,
so the run stops between ops and frees its GPU memory; the parent kills the child if that takes
longer than its grace period. Qt-free.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import IO, Any

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CANCELLED = 3
DEFAULT_EXECUTOR = "swimlanes.gpu:execute"
DEFAULT_CALIBRATOR = "swimlanes.gpu.auto_calibrate:ensure_calibrated"


class _Channel:
    """Writes protocol lines to a private copy of stdout."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def send(self, message: dict[str, Any]) -> None:
        self._stream.write(json.dumps(message, separators=(",", ":")) + "\n")
        self._stream.flush()


def _take_stdout() -> IO[str]:
    """Keep fd 1 for the protocol and send everything else printed (fd 1 too) to stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(os.dup(2), "w", buffering=1)
    return os.fdopen(protocol_fd, "w", encoding="utf-8")


def _load_executor(spec: str) -> Callable[..., Any]:
    module_name, _, func_name = spec.partition(":")
    if not module_name or not func_name:
        raise ValueError(f"--executor must look like module:function (got {spec!r})")
    module = importlib.import_module(module_name)
    func = getattr(module, func_name, None)
    if not callable(func):
        raise ValueError(f"{spec} is not a function")
    return func


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m swimlanes.gpu.child")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--backend", default="auto")
    p.add_argument("--executor", default=DEFAULT_EXECUTOR, metavar="MODULE:FUNCTION")
    p.add_argument("--calibrate", action="store_true", help="calibrate this host first if needed")
    p.add_argument("--calibrator", default=DEFAULT_CALIBRATOR, metavar="MODULE:FUNCTION")
    return p.parse_args(argv)


def _error_text(err: BaseException) -> str:
    problems = getattr(err, "problems", None)
    if problems:
        return "the pipeline is not valid:\n" + "\n".join(str(p) for p in problems)
    return str(err) or type(err).__name__


def run(argv: list[str] | None = None, stdin: IO[str] | None = None) -> int:
    """Read a pipeline from stdin, execute it and stream the protocol; returns the exit code."""
    args = _parse_args(argv)
    channel = _Channel(_take_stdout())
    cancelled = False

    def on_sigterm(_signum: int, _frame: Any) -> None:
        nonlocal cancelled
        cancelled = True

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        from swimlanes.model.io import pipeline_from_json

        pipeline = pipeline_from_json((stdin or sys.stdin).read())
        execute = _load_executor(args.executor)
        reference = (
            _calibrate(args.calibrator, channel, lambda: cancelled) if args.calibrate else None
        )
        timeline = execute(
            pipeline,
            repeat=args.repeat,
            warmup=args.warmup,
            backend=args.backend,
            progress=lambda f: channel.send({"type": "progress", "fraction": float(f)}),
            cancel=lambda: cancelled,
            on_partial=lambda tl: channel.send({"type": "partial", "timeline": tl.to_dict()}),
        )
    except Exception as err:  # noqa: BLE001 - every failure becomes one clear message
        if cancelled or type(err).__name__ == "ExecutionCancelled":
            channel.send({"type": "cancelled"})
            return EXIT_CANCELLED
        channel.send({"type": "error", "message": _error_text(err)})
        return EXIT_ERROR
    if cancelled:
        channel.send({"type": "cancelled"})
        return EXIT_CANCELLED
    if reference is not None:
        timeline.meta["calibration"] = reference
    channel.send({"type": "result", "timeline": timeline.to_dict()})
    return EXIT_OK


def _calibrate(spec: str, channel: _Channel, cancel: Callable[[], bool]) -> dict[str, Any] | None:
    """This host's cached preset, calibrated first if there is none (progress on the channel);
    the reference the run records, or None when the cache could not be written."""
    calibrator = _load_executor(spec)
    try:
        entry, new = calibrator(
            progress=lambda f: channel.send({"type": "calibrating", "fraction": float(f)}),
            cancel=cancel,
        )
    except OSError as err:  # the calibration itself went fine: the run still can
        channel.send({"type": "calibrated", "problem": f"cannot cache this host's preset: {err}"})
        return None
    reference = entry.reference()
    channel.send(
        {"type": "calibrated", "new": bool(new), "preset": reference, "origin": entry.describe()}
    )
    return reference


if __name__ == "__main__":
    sys.exit(run())
