"""``swimlanes critical-path``: the chain that set the makespan, and slack, from the CLI."""

from __future__ import annotations

import json

import pytest

from conftest import SHARED_TRACES
from swimlanes.cli import main
from swimlanes.resources import measurements_dir

KINETO = SHARED_TRACES / "kineto-a100-event-sync.json.gz"


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["critical-path", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_pipeline_is_simulated_and_its_path_printed(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, "chunked-overlap", "--device", "h200")
    path = out["path"]
    assert path[-1]["op"] == "device_sync" and path[-1]["via"] == "host"
    # The lesson: the copies of each direction queue on their engine, one after another.
    assert [p["via"] for p in path].count("engine") >= 3
    assert path[-1]["end_us"] == pytest.approx(out["makespan_us"], abs=0.01)
    assert sum(out["share_us"].values()) == pytest.approx(out["makespan_us"], abs=0.01)
    on_path = {p["index"] for p in path if p["on"] == "device"}
    slack = {o["index"]: o["slack_us"] for o in out["ops"]}
    assert all(slack[i] == 0 for i in on_path)
    assert any(s and s > 100 for s in slack.values())  # ops off the path have room


def test_the_table_says_what_each_step_waited_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["critical-path", "launch-bound"]) == 0
    text = capsys.readouterr().out
    assert "critical path of" in text and "previous host call" in text
    assert "along the path: host calls" in text


def test_a_measured_run_is_analysed_as_measured(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, str(measurements_dir() / "event-dependency.h200.json"))
    assert out["path"][-1]["op"] == "stream_sync"
    assert any(p["op"] == "kernel" for p in out["path"])


@pytest.mark.skipif(not KINETO.exists(), reason=f"shared traces not found in {SHARED_TRACES}")
def test_a_profiler_trace_gets_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, str(KINETO))
    assert out["path"] and out["makespan_us"] > 0


def test_a_missing_file_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    assert main(["critical-path", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert "nope.json" in err and "Traceback" not in err
