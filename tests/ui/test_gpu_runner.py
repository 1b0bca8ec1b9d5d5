"""GPU runs in a child process, driven by fake executors (no GPU needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.model.io import pipeline_to_json
from swimlanes.timeline.timeline import Timeline
from swimlanes.ui.gpu_runner import GpuRunner, child_env_with_path

HERE = str(Path(__file__).resolve().parent)


def _pipeline() -> Pipeline:
    return Pipeline(
        name="tiny",
        streams=[Stream("s1")],
        program=[
            Op("h2d", stream="s1", bytes=1 << 20),
            Op("kernel", stream="s1", blocks=4, threads=64, duration_us=10.0),
            Op("d2h", stream="s1", bytes=1 << 20),
        ],
    )


def _runner(qtbot, name: str, grace_ms: int = 3000) -> GpuRunner:
    runner = GpuRunner(
        executor=f"fake_executor:{name}", env=child_env_with_path(HERE), cancel_grace_ms=grace_ms
    )
    return runner


def _child(name: str, text: str) -> subprocess.CompletedProcess:
    env = {**__import__("os").environ, **child_env_with_path(HERE)}
    return subprocess.run(
        [sys.executable, "-m", "swimlanes.gpu.child", "--executor", f"fake_executor:{name}"],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_child_protocol_is_json_lines_even_when_the_executor_prints() -> None:
    out = _child("execute_noisy", pipeline_to_json(_pipeline()))
    assert out.returncode == 0, out.stderr
    messages = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [m["type"] for m in messages]
    assert kinds.count("partial") == 5 and kinds[-1] == "result"
    assert "compiling kernels" in out.stderr and "raw write" in out.stderr
    result = Timeline.from_dict(messages[-1]["timeline"])
    assert result.source == "measured" and len(result) == 3


def test_child_reports_a_bad_pipeline_clearly() -> None:
    out = _child("execute", '{"format": "swimlanes-pipeline", "version": 1, "program": [{}]}')
    assert out.returncode == 1
    message = json.loads(out.stdout.splitlines()[-1])
    assert message["type"] == "error"
    assert "program[0].op" in message["message"]


def test_child_reports_an_unknown_executor() -> None:
    out = _child("no_such_function", pipeline_to_json(_pipeline()))
    assert out.returncode == 1
    assert json.loads(out.stdout.splitlines()[-1])["type"] == "error"


def test_run_streams_progress_partials_and_result(qtbot) -> None:
    runner = _runner(qtbot, "execute")
    progress: list[float] = []
    partials: list[Timeline] = []
    runner.progress.connect(progress.append)
    runner.partial.connect(partials.append)
    with qtbot.waitSignal(runner.finished, timeout=30000) as result:
        runner.start(_pipeline(), repeat=3)
    timeline = result.args[0]
    assert isinstance(timeline, Timeline) and timeline.source == "measured"
    assert timeline.labels == ["H2D", "kernel", "D2H"]
    assert progress == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert len(partials) == 3
    qtbot.waitUntil(lambda: not runner.is_running(), timeout=5000)


def test_executor_error_becomes_a_clear_failure(qtbot) -> None:
    runner = _runner(qtbot, "execute_error")
    with qtbot.waitSignal(runner.failed, timeout=30000) as failed:
        runner.start(_pipeline())
    assert "12.3 GiB of device memory" in failed.args[0]
    qtbot.waitUntil(lambda: not runner.is_running(), timeout=5000)


def test_crashed_child_is_detected_and_document_is_safe(qtbot) -> None:
    runner = _runner(qtbot, "execute_crash")
    results: list[object] = []
    runner.finished.connect(results.append)
    with qtbot.waitSignal(runner.failed, timeout=30000) as failed:
        runner.start(_pipeline())
    message = failed.args[0]
    assert "crashed (exit code 139)" in message and "your document is safe" in message
    assert "Segmentation fault in the driver" in message
    assert results == []


def test_cancel_stops_the_run(qtbot) -> None:
    runner = _runner(qtbot, "execute_slow")
    failures: list[str] = []
    runner.failed.connect(failures.append)
    with qtbot.waitSignal(runner.partial, timeout=30000):
        runner.start(_pipeline())
    with qtbot.waitSignal(runner.cancelled, timeout=10000):
        runner.cancel()
    assert not runner.is_running() and failures == []


def test_cancel_kills_a_child_that_ignores_it(qtbot) -> None:
    runner = _runner(qtbot, "execute_ignores_cancel", grace_ms=300)
    with qtbot.waitSignal(runner.progress, timeout=30000):
        runner.start(_pipeline())
    with qtbot.waitSignal(runner.cancelled, timeout=10000):
        runner.cancel()
    assert not runner.is_running()


def test_second_start_while_running_is_refused(qtbot) -> None:
    runner = _runner(qtbot, "execute_slow")
    with qtbot.waitSignal(runner.partial, timeout=30000):
        runner.start(_pipeline())
    with qtbot.waitSignal(runner.failed, timeout=1000) as failed:
        runner.start(_pipeline())
    assert "already in progress" in failed.args[0]
    with qtbot.waitSignal(runner.cancelled, timeout=10000):
        runner.cancel()


def test_real_executor_runs_in_the_child_under_the_cuda_simulator(qtbot) -> None:
    """The default executor (swimlanes.gpu.execute) end to end, on numba's CUDA simulator."""
    from swimlanes.model.io import load_pipeline
    from swimlanes.resources import example_path

    runner = GpuRunner(env={"NUMBA_ENABLE_CUDASIM": "1"})
    pipeline = load_pipeline(example_path("two-streams"))
    with qtbot.waitSignal(runner.finished, timeout=60000) as result:
        runner.start(pipeline, repeat=1, warmup=0)
    timeline = result.args[0]
    assert timeline.source == "measured" and len(timeline) == len(pipeline.program)
    assert timeline.meta.get("backend")
