"""``swimlanes stats``: counts, busy time and overlap of traces; clear errors for bad ones."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from conftest import SHARED_TRACES
from swimlanes.cli import main
from swimlanes.timeline import TimelineBuilder
from swimlanes.timeline.io import save_run

SIMPLE_ADD = SHARED_TRACES / "kineto-simple-add.json.gz"


def _stats(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["stats", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.skipif(not SIMPLE_ADD.exists(), reason=f"shared traces not found in {SHARED_TRACES}")
def test_stats_of_a_kineto_trace(capsys: pytest.CaptureFixture[str]) -> None:
    with gzip.open(SIMPLE_ADD, "rt") as f:
        events = json.load(f)["traceEvents"]
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    want = {
        f"stream {s}": Counter(e["cat"] for e in gpu if e["args"]["stream"] == s)
        for s in sorted({e["args"]["stream"] for e in gpu})
    }
    out = _stats(capsys, str(SIMPLE_ADD))
    got = {s["name"]: s for s in out["streams"]}
    assert set(got) == set(want)
    for name, counts in want.items():
        assert got[name]["kernels"] == counts["kernel"]
        assert got[name]["memcpy"] == counts["gpu_memcpy"]
        assert got[name]["memset"] == counts["gpu_memset"]
        assert got[name]["busy_us"] > 0
    assert set(out["engines"]) == {"H2D", "Compute"}
    assert out["overlap"]["pairs"] == [
        {"a": "stream 7", "b": "stream 20", "overlap_us": out["overlap"]["total_us"]}
    ]
    assert out["makespan_us"] > 0


def test_stats_overlap_of_a_saved_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = TimelineBuilder(["a", "b", "c"], ["H2D", "compute"])
    b.add(index=0, kind="h2d", stream="a", engine="H2D", issue_start=0, issue_end=1_000,
          start=1_000, end=11_000, nbytes=10_000)  # fmt: skip
    b.add(index=1, kind="kernel", stream="b", engine="compute", issue_start=1_000,
          issue_end=2_000, start=5_000, end=15_000)  # fmt: skip
    b.add(index=2, kind="kernel", stream="c", engine="compute", issue_start=2_000,
          issue_end=3_000, start=9_000, end=10_000)  # fmt: skip
    run = tmp_path / "run.json"
    save_run(run, b.build(source="measured", device="H200"))
    out = _stats(capsys, str(run))
    assert [s["ops"] for s in out["streams"]] == [1, 1, 1]
    assert [s["busy_us"] for s in out["streams"]] == [10.0, 10.0, 1.0]
    pairs = {(p["a"], p["b"]): p["overlap_us"] for p in out["overlap"]["pairs"]}
    assert pairs == {("a", "b"): 6.0, ("a", "c"): 1.0, ("b", "c"): 1.0}
    assert out["overlap"]["total_us"] == 6.0  # 5..11 us: at least two streams busy
    assert out["engines"]["H2D"] == {"ops": 1, "busy_us": 10.0, "busy_pct": round(100 * 10 / 15, 2)}
    assert out["engines"]["compute"]["busy_us"] == 10.0
    assert out["makespan_us"] == 15.0
    assert out["metrics"]["overlap_us"] == 6.0

    assert main(["stats", str(run)]) == 0
    text = capsys.readouterr().out
    assert "a + b: 6.0 us" in text and "H2D" in text and "makespan 15.0 us" in text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"traceEvents": [{"ph": "X", "ts": "x"}]}', "traceEvents[0]: 'ts' must be a number"),
        ('{"traceEvents": [', "truncated"),
        ("", "expected a JSON object or array"),
    ],
)
def test_malformed_trace_exits_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["stats", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err
