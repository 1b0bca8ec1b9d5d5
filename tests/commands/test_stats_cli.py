"""``swimlanes stats``: counts, busy time and overlap of traces; clear errors for bad ones."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import SHARED_TRACES
from swimlanes.cli import main
from swimlanes.resources import example_path, measurements_dir
from swimlanes.timeline import TimelineBuilder
from swimlanes.timeline.formats.io import run_to_dict, save_run

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


def _error(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    assert main(["stats", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    return err


def _run_with(tmp_path: Path, **timeline: object) -> Path:
    b = TimelineBuilder(["s1"], ["H2D"])
    b.add(index=0, kind="h2d", stream="s1", engine="H2D", issue_start=0, issue_end=5,
          start=5, end=50, nbytes=100)  # fmt: skip
    run = run_to_dict(b.build(source="measured"))
    run["timeline"].update(timeline)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    return path


@pytest.mark.parametrize(
    ("timeline", "where"),
    [
        ({"occupancy": []}, "timeline.occupancy: must be a JSON object"),
        ({"deps": []}, "timeline.deps: must be a JSON object"),
        ({"labels": {"a": 1}}, "timeline.labels: must be a JSON list"),
        ({"deps": {"src": [0], "dst": [0], "kind": [7]}}, "timeline.deps.kind[0]"),
    ],
)
def test_wrong_typed_run_members_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], timeline: dict, where: str
) -> None:
    assert where in _error(capsys, _run_with(tmp_path, **timeline))


def test_numbers_past_int64_exit_2_naming_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": %s}'
    bad = tmp_path / "t.json"
    bad.write_text('{"traceEvents": [' + kernel % ("9" * 4301) + "]}")
    assert "traceEvents[0]: a number far too long" in _error(capsys, bad)
    bad.write_text('{"traceEvents": [' + kernel % "1e300" + "]}")
    assert "traceEvents[0]: 'dur' is not a finite time in range" in _error(capsys, bad)
    text = _run_with(tmp_path).read_text()
    assert '"end": [50]' in text
    text = text.replace('"end": [50]', '"end": [%s]' % ("9" * 4301))
    bad.write_text(text)
    assert "timeline.columns.end[0]: must be an integer" in _error(capsys, bad)
    bad.write_text(text.replace("9" * 4301, str(2**64)))
    assert "timeline.columns.end[0]: must be an integer in the 64-bit range" in _error(capsys, bad)


def test_device_properties_with_a_list_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 5,
              "args": {"stream": 7, "device": 0}}  # fmt: skip
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [kernel], "deviceProperties": [{"id": [0]}]}))
    out = _stats(capsys, str(path))
    assert out["ops"] == 1 and out["device"] == ""


def test_stats_of_a_trace_with_two_timelines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = measurements_dir() / "two-streams.h200.json"
    trace = tmp_path / "both.json"
    assert main(["export", str(example_path("two-streams")), "--measured", str(run),
                 "-o", str(trace)]) == 0  # fmt: skip
    capsys.readouterr()
    out = _stats(capsys, str(trace))
    assert [(t["source"], t["device"]) for t in out["timelines"]] == [
        ("measured", "NVIDIA H200"),
        ("simulated", "h200"),
    ]
    # The top-level keys are the first timeline's, as before.
    assert {k: v for k, v in out.items() if k != "timelines"} == out["timelines"][0]
    measured, simulated = out["timelines"]
    assert measured["ops"] == simulated["ops"] == 7
    assert measured["makespan_us"] != simulated["makespan_us"]
    single = _stats(capsys, str(run))
    assert single["timelines"] == [{k: v for k, v in single.items() if k != "timelines"}]

    assert main(["stats", str(trace)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("2 timelines in this file")
    assert "measured on NVIDIA H200" in text and "simulated on h200" in text


# -- decompression bombs: memory grows with what is kept, not with the text ---------------------
MiB = 1024 * 1024
KERNEL = b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 5, "args": {"stream": 7}}'
BOMBS = {
    # name: (text before the filler, 1 MiB filler, text after it)
    "string in an event": (b'{"traceEvents": [{"name": "', b"x" * MiB, b'"}]}'),
    "string in an unused key": (b'{"junk": "', b"x" * MiB, b'", "traceEvents": [' + KERNEL + b"]}"),
    "whitespace": (b'{"traceEvents": [', b" " * MiB, KERNEL + b"]}"),
    "nesting in an unused key": (b'{"junk": ', b"[" * MiB, b"]}"),
}
# 128 MiB of text in ~130 KB of gzip. Measured peaks (VmHWM of stats in a subprocess): 35-75 MB
# here, 285 MB before import was streamed.
BOMB_MIB = 128
PEAK_LIMIT_MB = 160


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("name", list(BOMBS))
def test_gzip_bomb_peak_memory_is_bounded(tmp_path: Path, name: str) -> None:
    head, filler, tail = BOMBS[name]
    path = tmp_path / "bomb.json.gz"
    with gzip.open(path, "wb", compresslevel=6) as f:
        f.write(head)
        for _ in range(BOMB_MIB):
            f.write(filler)
        f.write(tail)
    assert path.stat().st_size < 2 * MiB
    # The peak resident size of the child's own memory: VmHWM starts afresh at exec, where
    # getrusage's maxrss would include the forked test process's.
    script = (
        "import re, sys\n"
        "from swimlanes.cli import main\n"
        "rc = main(['stats', '--json', sys.argv[1]])\n"
        "status = open('/proc/self/status').read()\n"
        "print('peak', int(re.search(r'VmHWM:\\s*(\\d+)', status).group(1)) // 1024, rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120
    )
    peak, rc = done.stdout.split("peak ")[-1].split()
    assert "Traceback" not in done.stderr
    assert int(peak) < PEAK_LIMIT_MB, f"{name}: peak {peak} MB"
    if name == "string in an event":
        assert rc == "2" and "16,777,216-character limit" in done.stderr
    elif name.startswith("nesting"):
        assert rc == "2" and "'junk': truncated JSON" in done.stderr
    else:
        assert rc == "0" and '"ops": 1' in done.stdout
