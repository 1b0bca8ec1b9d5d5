"""``swimlanes simulate``, ``devices`` and ``gui``'s headless fallback, driven through cli.main."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from swimlanes.cli import main
from swimlanes.resources import example_path

TWO_STREAMS = str(example_path("two-streams"))
OP_KEYS = {"index", "op", "stream", "label", "issue_us", "start_us", "end_us"}


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_json_reports_the_textbook_figures(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, ["simulate", TWO_STREAMS, "--json"])
    assert out["device"] == "ideal"  # the example's preferred preset
    assert out["pipeline"] == "two-streams"
    assert out["makespan_us"] == pytest.approx(4000.0)
    assert out["serial_us"] == pytest.approx(6000.0)
    assert out["speedup"] == pytest.approx(1.5)
    assert [op["index"] for op in out["ops"]] == list(range(7))
    assert all(set(op) >= OP_KEYS for op in out["ops"])
    assert [op["label"] for op in out["ops"][:3]] == ["H2D A", "K A", "D2H A"]
    assert out["ops"][3]["start_us"] == pytest.approx(1000.0)  # H2D B waits for H2D A's engine
    assert out["ops"][-1]["op"] == "device_sync" and out["ops"][-1]["stream"] is None
    busy = sorted(out["engines"].values(), reverse=True)
    assert busy[:3] == pytest.approx([2000.0, 2000.0, 2000.0])


def test_device_option_overrides_the_pipelines_preset(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, ["simulate", TWO_STREAMS, "--device", "h200", "--json"])
    assert out["device"] == "h200"
    # Launch and copy issue costs on an H200 host make it slower than the textbook 4 units.
    assert out["makespan_us"] > 4000.0


def test_pipeline_without_a_device_uses_h200(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(example_path("two-streams").read_text(encoding="utf-8"))
    del doc["device"]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert _json(capsys, ["simulate", str(path), "--json"])["device"] == "h200"


def test_preset_file_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from swimlanes.engine import get_preset

    data = get_preset("ideal").to_dict()
    data["name"] = "my-gpu"
    preset = tmp_path / "my-gpu.json"
    preset.write_text(json.dumps(data), encoding="utf-8")
    out = _json(capsys, ["simulate", TWO_STREAMS, "--device", str(preset), "--json"])
    assert out["device"] == "my-gpu"
    assert out["makespan_us"] == pytest.approx(4000.0)


def test_table_lists_ops_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", TWO_STREAMS]) == 0
    out = capsys.readouterr().out
    assert out.startswith("two-streams\nsimulated on ideal, 7 ops;")
    rows = [line.split() for line in out.splitlines()]
    h2d_b = next(r for r in rows if r[:2] == ["3", "h2d"])
    # index, op, stream, label (2 words), issue, start, end, duration
    assert h2d_b[2] == "s2" and h2d_b[3:5] == ["H2D", "B"]
    assert [float(x) for x in h2d_b[5:]] == [0.0, 1000.0, 2000.0, 1000.0]
    assert any(r[:3] == ["6", "device_sync", "(host)"] for r in rows)
    summary = {line[:26].strip(): line[26:].split() for line in out.splitlines()[-8:]}
    assert summary["makespan"] == ["4000.0", "us"]
    assert summary["serial"][:2] == ["6000.0", "us"]
    assert summary["speedup"] == ["1.50x"]
    assert summary["Compute busy"] == ["2000.0", "us", "50.0%"]
    assert summary["2+ engines busy (overlap)"] == ["2000.0", "us", "50.0%"]


def test_invalid_pipeline_exits_2_with_json_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(example_path("two-streams").read_text(encoding="utf-8"))
    doc["program"][3]["bytes"] = -1
    doc["program"][1]["threads"] = 4096
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "error: program[3].bytes: must be a positive integer" in err
    assert "error: program[1].threads: must be at most 1024" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("missing", "error: no such file: "),
        ("not-json", "error: not valid JSON: "),
        ("version", "error: version: unsupported version 2: this Swimlanes reads version 1"),
    ],
)
def test_bad_files_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str, expected: str
) -> None:
    path = tmp_path / "f.json"
    if setup == "not-json":
        path.write_text("{oops", encoding="utf-8")
    elif setup == "version":
        path.write_text(json.dumps({"format": "swimlanes-pipeline", "version": 2}), "utf-8")
    assert main(["simulate", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(expected)
    assert captured.out == ""


def test_unknown_device_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", TWO_STREAMS, "--device", "gtx480"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown device 'gtx480'; choose one of ideal, h200")


def test_bad_device_in_the_file_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(example_path("two-streams").read_text(encoding="utf-8"))
    doc["device"] = "voodoo2"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "unknown device 'voodoo2'" in err and "(the device named in old.json)" in err


def test_broken_preset_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preset = tmp_path / "bad-gpu.json"
    preset.write_text('{"format": "swimlanes-device", "version": 1, "name": "x", "sm_count": 0}')
    assert main(["simulate", TWO_STREAMS, "--device", str(preset)]) == 2
    assert "sm_count: must be at least 1" in capsys.readouterr().err


def test_installed_command_prints_one_json_object() -> None:
    script = Path(sys.executable).parent / "swimlanes"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "swimlanes.cli"]
    done = subprocess.run(
        [*cmd, "simulate", str(example_path("chunked-overlap")), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["device"] == "ideal"
    assert out["makespan_us"] == pytest.approx(42500.0)
    assert len(out["ops"]) == 13


# -- devices ---------------------------------------------------------------------------------------
def test_devices_table_lists_every_preset(capsys: pytest.CaptureFixture[str]) -> None:
    from swimlanes.engine import preset_names

    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    first_words = [line.split()[0] for line in out.splitlines() if line.strip()]
    for name in preset_names():
        assert name in first_words
    h200 = next(line for line in out.splitlines() if line.startswith("h200 "))
    assert " 132 " in h200 and "GB/s" in h200
    # how an op picks its hardware queue: h200 takes a free one (calibrate's probe), a100 keeps
    # each stream's own
    assert "hyperq, 8, free" in h200
    a100 = next(line for line in out.splitlines() if line.startswith("a100 "))
    assert "hyperq, 8 " in a100 and "free" not in a100


def test_devices_json_has_the_key_figures(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json(capsys, ["devices", "--json"])
    by_name = {r["name"]: r for r in rows}
    assert {"ideal", "h200", "a100", "rtx4090", "c1060", "c2050", "k20c"} <= set(by_name)
    assert by_name["h200"]["sm_count"] == 132
    assert by_name["c2050"]["hardware_queues"] == "fermi"
    assert by_name["ideal"]["kernel_launch_cost_us"] == 0.0
    assert by_name["h200"]["queue_choice"] == "free" and by_name["a100"]["queue_choice"] == "stream"


# -- gui fallback ---------------------------------------------------------------------------------
def _no_display(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")


def test_gui_without_a_display_prints_the_default_example(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_display(monkeypatch)
    assert main(["gui"]) == 0
    captured = capsys.readouterr()
    assert "cannot open the desktop app: no display" in captured.err
    assert "simulated on ideal, 13 ops" in captured.out
    assert "H2D chunk 3" in captured.out


def test_gui_without_a_display_simulates_the_given_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_display(monkeypatch)
    assert main(["gui", TWO_STREAMS]) == 0
    assert capsys.readouterr().out.startswith("two-streams\nsimulated on ideal")


def test_gui_falls_back_when_qt_cannot_load(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.setitem(sys.modules, "swimlanes.ui.app", None)  # import raises ImportError
    assert main(["gui"]) == 0
    captured = capsys.readouterr()
    assert "Qt could not be loaded" in captured.err
    assert "makespan" in captured.out


def test_gui_hands_the_file_to_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str | None] = []
    fake = types.ModuleType("swimlanes.ui.app")
    fake.main = lambda file=None: opened.append(file) or 0  # type: ignore[attr-defined]
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.setitem(sys.modules, "swimlanes.ui.app", fake)
    assert main(["gui", TWO_STREAMS]) == 0
    assert main([]) == 0  # no command: the app, with no file
    assert opened == [TWO_STREAMS, None]


def test_table_says_when_a_timeline_was_measured() -> None:
    from swimlanes.model import Op, Pipeline, Stream
    from swimlanes.services.simulation import format_table
    from swimlanes.timeline import TimelineBuilder, compute_metrics

    b = TimelineBuilder(["s1"], ["H2D"])
    times = {"issue_start": 5_000, "issue_end": 14_000, "start": 20_000, "end": 1_020_000}
    b.add(index=0, kind="h2d", stream="s1", engine="H2D", label="H2D A", **times)
    tl = b.build(source="measured", device="h200")
    p = Pipeline("one copy", [Stream("s1")], [Op("h2d", stream="s1", bytes=55_000_000)])
    table = format_table(p, tl, compute_metrics(tl))
    assert table.startswith("one copy\nmeasured on h200, 1 ops;")
    row = next(line.split() for line in table.splitlines() if line.lstrip().startswith("0 "))
    assert row[-4:] == ["0.0", "15.0", "1015.0", "1000.0"]


def test_simulate_insights_explain_the_trap_and_stay_quiet_on_a_good_pipeline(capsys) -> None:
    from swimlanes.cli import main as cli_main

    assert cli_main(["simulate", "resources/examples/pageable-trap.json", "--insights"]) == 0
    text = capsys.readouterr().out
    assert "[problem]" in text and "pageable host memory" in text
    assert cli_main(["simulate", "resources/examples/chunked-overlap.json", "--insights"]) == 0
    assert "Insights: none" in capsys.readouterr().out


def test_simulate_insights_json_lists_rules_and_their_ops(capsys) -> None:
    import json

    from swimlanes.cli import main as cli_main

    path = "resources/examples/launch-bound.json"
    assert cli_main(["simulate", path, "--insights", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rules = {ins["rule"]: ins for ins in data["insights"]}
    assert "launch_bound" in rules
    assert rules["launch_bound"]["op_indexes"]
    assert data["makespan_us"] > 0


# -- bounds everywhere: each reproducer is refused with `error:`, exit 2, no traceback --------------
H = '{"format":"swimlanes-pipeline","version":1,'


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], seconds: float = 10.0) -> str:
    """Run ``argv`` in-process: exit 2, ``error:`` lines only, no traceback, within ``seconds``
    (where the old code hung, the refusal comes before any simulation)."""
    t0 = time.perf_counter()
    code = main(argv)
    elapsed = time.perf_counter() - t0
    captured = capsys.readouterr()
    assert code == 2, captured
    assert captured.out == ""
    assert captured.err.startswith("error: ") and "Traceback" not in captured.err
    assert all(line.startswith("error: ") for line in captured.err.splitlines())
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    return captured.err


def _file(tmp_path: Path, text: str | bytes, name: str = "p.json") -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # was RecursionError
            H + '"program":[],"x":' + "[" * 990 + "]" * 990 + "}",
            "nested deeper than 64 levels of arrays and objects",
        ),
        (  # was OverflowError (times past 2**63 ns)
            H + '"program":[{"op":"host","duration_us":1e16}]}',
            "error: program[0].duration_us: must be at most 1e+09 us (got 1e+16)",
        ),
        (  # was OverflowError in math.isfinite
            H + '"program":[{"op":"host","duration_us":1' + "0" * 310 + "}]}",
            "error: program[0].duration_us: must be at most 1e+09 us (got <an integer of 311 ",
        ),
        (  # was ValueError (int conversion past 4300 digits)
            H + '"program":[{"op":"host","duration_us":' + "1" * 4301 + "}]}",
            "error: program[0].duration_us: must be at most 1e+09 us (got <an integer of 4301 ",
        ),
        (  # was RuntimeError "simulation stalled"
            H + '"program":[{"op":"host","duration_us":9e15},{"op":"host","duration_us":9e15}]}',
            "error: program[1].duration_us: must be at most 1e+09 us (got 9e+15)",
        ),
        (  # was OverflowError
            H + '"program":[{"op":"h2d","bytes":1' + "0" * 60 + "}]}",
            "error: program[0].bytes: must be at most 1099511627776 bytes, 1 TiB",
        ),
        (  # was TypeError
            H + '"program":[{"op":"kernel","blocks":1,"threads":1,"duration_us":1,'
            '"blocks_per_sm":[1]}]}',
            "error: program[0].blocks_per_sm: must be a positive integer",
        ),
        (  # was OverflowError
            H + '"program":[{"op":"kernel","blocks":1,"threads":1,"duration_us":1,'
            '"blocks_per_sm":1e309}]}',
            "error: program[0].blocks_per_sm: must be a positive integer",
        ),
        (  # was a hang
            H + '"program":[{"op":"kernel","blocks":9007199254740993,"threads":256,'
            '"duration_us":1}]}',
            "error: program[0].blocks: must be at most 2147483647 (got 9007199254740993)",
        ),
        (  # was a wrong answer with exit 0: a makespan of 21.6 us
            H + '"streams":[{"name":"s1"}],"program":['
            '{"op":"kernel","stream":"s1","blocks":1,"threads":1,"duration_us":9e15},'
            '{"op":"kernel","stream":"s1","blocks":1,"threads":1,"duration_us":9e15}]}',
            "error: program[0].duration_us: must be at most 1e+09 us (got 9e+15)",
        ),
    ],
    ids=[
        "nesting-990",
        "duration-1e16",
        "int-past-1e308",
        "int-4301-digits",
        "two-host-9e15",
        "bytes-1e60",
        "blocks_per_sm-list",
        "blocks_per_sm-1e309",
        "blocks-2**53+1",
        "two-kernels-9e15",
    ],
)
def test_bad_pipelines_are_refused_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    err = _refused(capsys, ["simulate", _file(tmp_path, text), "--json"], seconds=5.0)
    assert expected in err


def test_a_long_device_name_in_the_file_is_an_unknown_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was OSError (file name too long)."""
    text = H + '"device":"' + "a" * 256 + '","program":[{"op":"host","duration_us":1}]}'
    err = _refused(capsys, ["simulate", _file(tmp_path, text), "--json"])
    assert err.startswith("error: unknown device 'aaaa")
    assert "(256 characters)" in err and "(the device named in p.json)" in err


@pytest.mark.parametrize("device", ["d" * 256, "d" * 5000, "x/" * 3000 + "gpu.json", "a\0b"])
def test_odd_device_options_exit_2(capsys: pytest.CaptureFixture[str], device: str) -> None:
    err = _refused(capsys, ["simulate", TWO_STREAMS, "--device", device, "--json"])
    assert err.startswith(("error: unknown device ", "error: no preset file "))


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ('"max_blocks_per_sm": [1]', "max_blocks_per_sm: must be an integer"),
        ('"sm_count": "many"', "sm_count: must be an integer (got 'many')"),
        ('"sm_count": 1e309', "sm_count: must be an integer (got inf)"),
        ('"issue_cost_us": {"kernel": "fast"}', "issue_cost_us.kernel: must be a number"),
        ('"h2d_pinned_gbps": true', "h2d_pinned_gbps: must be a number (got True)"),
        ('"bandwidth_table": {"h2d_pinned": 5}', "bandwidth_table.h2d_pinned: must be a list"),
        ('"x": ' + "[" * 3000 + "]" * 3000, "nested deeper than 64 levels"),
    ],
)
def test_preset_files_with_bad_field_types_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: str, expected: str
) -> None:
    text = '{"format": "swimlanes-device", "version": 1, "name": "x", ' + fields + "}"
    preset = _file(tmp_path, text, "gpu.json")
    assert expected in _refused(capsys, ["simulate", TWO_STREAMS, "--device", preset, "--json"])


def test_a_huge_grid_is_refused_before_simulating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was a hang (1e9 blocks took 1.6 s, 1e12 over 30 s; the app's window froze)."""
    text = H + '"program":[{"op":"kernel","blocks":2147483647,"threads":1024,"duration_us":1}]}'
    err = _refused(capsys, ["simulate", _file(tmp_path, text), "--json"], seconds=3.0)
    assert "program[0].blocks: the kernels need 8134408 waves of thread blocks on h200" in err
    assert "at most 1048576 in one pipeline" in err


def test_100000_streams_are_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was a hang: 226 s (a quadratic duplicate-name check)."""
    streams = ",".join(f'{{"name":"s{i}"}}' for i in range(100_000))
    text = H + f'"streams":[{streams}],"program":[{{"op":"device_sync"}}]}}'
    err = _refused(capsys, ["simulate", _file(tmp_path, text), "--json"], seconds=5.0)
    assert err == "error: streams: 100000 streams: at most 1024\n"


def test_many_streams_with_many_default_stream_ops_are_refused_quickly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    streams = [{"name": f"s{i}"} for i in range(1024)]
    program = [{"op": "kernel", "stream": s["name"], "blocks": 1, "threads": 32,
                "duration_us": 1} for s in streams]  # fmt: skip
    program += [{"op": "device_sync"}] * 20_000
    doc = {"format": "swimlanes-pipeline", "version": 1, "streams": streams, "program": program}
    err = _refused(capsys, ["simulate", _file(tmp_path, json.dumps(doc)), "--json"], seconds=5.0)
    assert "each checking all 1025 streams" in err


def test_the_largest_values_simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At the limits the answer is right: two kernels of 1e9 us on one stream take 2e9 us."""
    text = (
        H + '"device":"ideal","streams":[{"name":"s1"}],"program":['
        '{"op":"kernel","stream":"s1","blocks":1,"threads":1,"duration_us":1e9},'
        '{"op":"kernel","stream":"s1","blocks":1,"threads":1,"duration_us":1e9}]}'
    )
    out = _json(capsys, ["simulate", _file(tmp_path, text), "--json"])
    assert out["makespan_us"] == pytest.approx(2e9)
    assert out["ops"][1]["start_us"] == pytest.approx(1e9)


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "{gz}", "--json"],
        ["codegen", "{gz}", "--lang", "python", "-o", "{out}"],
        ["compare", "{gz}", "--measured", "{gz}"],
    ],
    ids=["simulate", "codegen", "compare"],
)
def test_a_gzipped_trace_given_as_a_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Was a raw "'utf-8' codec" error."""
    import gzip

    gz = _file(tmp_path, gzip.compress(b'{"traceEvents": []}'), "run.json.gz")
    args = [a.format(gz=gz, out=tmp_path / "out.py") for a in argv]
    err = _refused(capsys, args)
    assert err == (
        f"error: {gz} is not a pipeline file (gzip-compressed data; open a trace with 'stats' "
        "or File > Open measurement)\n"
    )


def test_a_file_name_too_long_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, ["simulate", "p" * 5000, "--json"])
    assert "(5000 characters)" in err and len(err) < 200
