"""``swimlanes run`` with several pipelines, under numba's CUDA simulator (a child process:
numba reads NUMBA_ENABLE_CUDASIM when it is first imported)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from swimlanes.timeline.formats.io import load_run


def _swimlanes(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    cmd = [sys.executable, "-m", "swimlanes", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def test_run_takes_many_files_saves_each_and_reports_the_bad_ones(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "swimlanes-pipeline", "version": 1, "program": [{"op": "x"}]}')
    out_dir = tmp_path / "runs"
    files = ["two-streams", str(bad), str(tmp_path / "missing.json"), "event-dependency"]
    r = _swimlanes(
        "run", *files, "--repeat", "1", "--warmup", "0", "--json", "--out-dir", str(out_dir)
    )
    assert r.returncode == 1, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [line["file"] for line in lines] == ["two-streams", "event-dependency"]
    assert all(line["repeat"] == 1 and line["makespan_us"] > 0 for line in lines)
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "event-dependency.run.json",
        "two-streams.run.json",
    ]
    timeline, pipeline = load_run(out_dir / "two-streams.run.json")
    assert len(timeline) == len(pipeline.program) == 7
    assert f"error: {bad}: program[0].op" in r.stderr
    assert "missing.json: no such file" in r.stderr
    assert "2 of 4 pipelines failed" in r.stderr
    assert "Traceback" not in r.stderr


def test_run_refuses_one_output_file_for_several_pipelines(tmp_path: Path) -> None:
    r = _swimlanes("run", "two-streams", "ping-pong", "-o", str(tmp_path / "x.json"))
    assert r.returncode == 2
    assert "use --out-dir" in r.stderr
    assert not (tmp_path / "x.json").exists()
