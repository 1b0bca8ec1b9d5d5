"""The limits of the file format (swimlanes.model.document): each refusal names the JSON path
and the limit, nothing reaches Python's own limits (recursion, int conversion, overflow), and
the checks are linear. Each reproducer of the "bounds everywhere" issue is a test here."""

from __future__ import annotations

import gzip
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import pytest

from swimlanes.model import PipelineError, load_pipeline, pipeline_from_dict, pipeline_from_json
from swimlanes.model import document as d
from swimlanes.model import io as model_io
from swimlanes.model.op_defaults import new_stream_name
from swimlanes.model.validate import MAX_PROBLEMS, _parse_streams
from swimlanes.model.validate_checks import Checker

H = '{"format":"swimlanes-pipeline","version":1,'
KERNEL = '{"op":"kernel","blocks":1,"threads":1,"duration_us":1'


def _problems(text: str) -> list[str]:
    with pytest.raises(PipelineError) as info:
        pipeline_from_json(text)
    return [str(p) for p in info.value.problems]


def test_the_limits_fit_the_simulators_clock() -> None:
    # Every op at its longest, one after another, stays below 2**60 ns: a quarter of the
    # simulator's range (it uses 2**62 ns as "never").
    assert d.MAX_OPS * d.MAX_DURATION_US * 1000 < 2**60
    assert d.MAX_BYTES < 2**62 and d.MAX_BLOCKS < 2**31
    # A copy of MAX_BYTES at the slowest built-in rate (c1060 pageable, 3 GB/s) fits one op.
    assert d.MAX_BYTES / 3.0 < d.MAX_DURATION_US * 1000
    # The timeline's stream column is int16.
    assert d.MAX_STREAMS + 1 < 2**15


# -- nesting -----------------------------------------------------------------------------------
def test_nesting_990_levels_deep_is_refused_with_its_path() -> None:
    text = H + '"program":[],"x":' + "[" * 990 + "]" * 990 + "}"
    (problem,) = _problems(text)
    assert problem.startswith("x[0][0][0]")
    assert problem.endswith(f"nested deeper than {d.MAX_JSON_DEPTH} levels of arrays and objects")


def test_nesting_anywhere_counts_and_the_limit_is_exact() -> None:
    inner = d.MAX_JSON_DEPTH - 4  # the document, program, op, and the "note" value's own
    ok = H + '"program":[' + KERNEL + ',"note":' + "[" * inner + "]" * inner + "}]}"
    assert pipeline_from_json(ok).program[0].extra["note"]
    # 65 levels: the document, program, op, then 62 objects
    deep = H + '"program":[' + KERNEL + ',"note":' + '{"a":' * (inner + 2) + "1" + "}" * (inner + 2)
    (problem,) = _problems(deep + "}]}")
    assert problem.startswith("program[0].note.a.a.a")
    assert "nested deeper than 64 levels" in problem


def test_brackets_inside_strings_do_not_count() -> None:
    text = H + '"program":[],"x":"' + "[{" * 2000 + '\\"[[\\\\","y":"]]]"}'
    assert pipeline_from_json(text).extra["x"].startswith("[{")


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def _leaf(rng: random.Random) -> Any:
    return rng.choice(['"[{\\"', "\\\\", "]", "x", 1, None, "{[", '"', [], {}, [[]], {"a": []}])


def _random_json(rng: random.Random, depth: int) -> Any:
    """Arrays and objects nested ``depth`` deep along one random spine, with shallow siblings
    (strings full of brackets, quotes and backslashes) beside it at every level."""
    if depth <= 0:
        return _leaf(rng)
    siblings = [_leaf(rng) for _ in range(rng.randint(0, 2))]
    spine = _random_json(rng, depth - 1)
    items = [*siblings, spine] if rng.random() < 0.5 else [spine, *siblings]
    if rng.random() < 0.5:
        return items
    return {f'k{i}"[': item for i, item in enumerate(items)}


def test_the_depth_check_agrees_with_the_parsed_depth() -> None:
    rng = random.Random(7)
    for _ in range(400):
        value = _random_json(rng, rng.randint(1, 80))
        raw = json.dumps(value).encode()
        assert model_io._too_deep(raw) == (_depth(value) > d.MAX_JSON_DEPTH), raw[:200]


def test_the_depth_check_is_linear_and_fast() -> None:
    ops = ",".join([KERNEL + ',"note":"[[[[\\\\\\"{{{"}'] * 200_000)
    text = H + '"program":[' + ops + "]}"
    t0 = time.perf_counter()
    assert not model_io._too_deep(text.encode())
    assert time.perf_counter() - t0 < 2.0


# -- numbers -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("literal", "got"),
    [
        ("1e16", "got 1e+16"),
        ("1e300", "got 1e+300"),
        ("1" + "0" * 310, "got <an integer of 311 digits>"),
        ("1" * 4301, "got <an integer of 4301 digits>"),
        ("9223372036854775808", "got <an integer of 19 digits>"),
    ],
)
def test_durations_past_the_limit_name_path_and_limit(literal: str, got: str) -> None:
    problems = _problems(H + '"program":[{"op":"host","duration_us":' + literal + "}]}")
    assert problems == [f"program[0].duration_us: must be at most 1e+09 us ({got})"]


def test_two_host_ops_of_9e15_us_are_refused() -> None:
    text = H + '"program":[{"op":"host","duration_us":9e15},{"op":"host","duration_us":9e15}]}'
    assert _problems(text) == [
        "program[0].duration_us: must be at most 1e+09 us (got 9e+15)",
        "program[1].duration_us: must be at most 1e+09 us (got 9e+15)",
    ]


@pytest.mark.parametrize("literal", ["1e60", "1" + "0" * 60, "1099511627777"])
def test_bytes_past_one_tib_are_refused(literal: str) -> None:
    (problem,) = _problems(H + '"program":[{"op":"h2d","bytes":' + literal + "}]}")
    assert problem.startswith("program[0].bytes: must be")
    if "." not in literal and "e" not in literal:
        assert "at most 1099511627776 bytes, 1 TiB" in problem


def test_blocks_past_cudas_grid_limit_are_refused() -> None:
    text = H + '"program":[{"op":"kernel","blocks":9007199254740993,"threads":1,"duration_us":1}]}'
    assert _problems(text) == [
        "program[0].blocks: must be at most 2147483647 (got 9007199254740993)"
    ]


def test_a_kernels_total_block_time_is_bounded() -> None:
    text = H + '"program":[{"op":"kernel","blocks":2000000,"threads":32,"block_us":1000}]}'
    (problem,) = _problems(text)
    assert problem.startswith("program[0].block_us: 2000000 blocks of 1000 us make 2e+09 us")
    assert problem.endswith("at most 1e+09 us in one kernel")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("[1]", "must be a positive integer"),
        ("1e309", "must be a positive integer"),
        ("1.5", "must be a positive integer"),
        ("true", "must be a positive integer"),
        ("0", "must be a positive integer"),
        ("4096", "must be at most 2048 (got 4096)"),
        ("1" * 30, "must be at most 2048 (got <an integer of 30 digits>)"),
    ],
)
def test_blocks_per_sm_is_checked(value: str, expected: str) -> None:
    text = H + '"program":[' + KERNEL + ',"blocks_per_sm":' + value + "}]}"
    assert _problems(text) == [f"program[0].blocks_per_sm: {expected}"]


def test_blocks_per_sm_is_kept_when_valid_and_only_on_kernels() -> None:
    ok = pipeline_from_json(H + '"program":[' + KERNEL + ',"blocks_per_sm":4}]}')
    assert ok.program[0].extra == {"blocks_per_sm": 4}
    text = H + '"program":[{"op":"host","duration_us":1,"blocks_per_sm":4}]}'
    assert _problems(text) == ["program[0].blocks_per_sm: only kernels take this"]


def test_flops_and_priorities_are_bounded() -> None:
    text = H + '"program":[{"op":"kernel","blocks":1,"threads":1,"flops":1e16}]}'
    assert _problems(text) == ["program[0].flops: must be at most 1e+15 (got 1e+16)"]
    text = H + '"streams":[{"name":"s1","priority":2147483648}],"program":[]}'
    assert _problems(text)[0].startswith("streams[0].priority: must be from -2147483648 to ")


@pytest.mark.parametrize(
    ("fragment", "path"),
    [
        ('"layout":{"zoom":' + "7" * 4301 + "}", "layout.zoom"),
        ('"layout":[1,' + "9" * 25 + "]", "layout[1]"),
        ('"layout":{"zoom":NaN}', "layout.zoom"),
        ('"layout":{"zoom":-Infinity}', "layout.zoom"),
        ('"layout":1e999', "layout"),
    ],
)
def test_unknown_keys_hold_only_what_json_can_hold(fragment: str, path: str) -> None:
    (problem,) = _problems(H + '"program":[],' + fragment + "}")
    assert problem.startswith(f"{path}: ")
    assert "64 bits" in problem or "finite number" in problem


def test_unknown_keys_of_ops_and_streams_are_checked_too() -> None:
    text = (
        H + '"streams":[{"name":"s1","color":NaN}],'
        '"program":[' + KERNEL + ',"note":{"n":' + "1" * 30 + "}}]}"
    )
    assert _problems(text) == [
        "streams[0].color: must be a finite number (got nan)",
        "program[0].note.n: integers must fit in 64 bits (got <an integer of 30 digits>)",
    ]


def test_validate_never_converts_a_huge_in_memory_integer() -> None:
    doc = json.loads(H + '"program":[{"op":"host","duration_us":1}]}')
    doc["program"][0]["duration_us"] = 10**5000  # past math.isfinite's float conversion
    doc["program"].append({"op": 10**5000})
    problems = [
        str(p) for p in pytest.raises(PipelineError, pipeline_from_dict, doc).value.problems
    ]
    assert problems[0].startswith("program[0].duration_us: must be at most 1e+09 us (got <an")
    assert problems[1].startswith("program[1].op: must be one of")


# -- strings, counts ---------------------------------------------------------------------------
def test_long_names_are_refused() -> None:
    long = "a" * (d.MAX_NAME_CHARS + 1)
    text = (
        H + f'"name":"{long}","streams":[{{"name":"{long}"}}],'
        f'"program":[{{"op":"event_record","event":"{long}","label":"{long}"}}]}}'
    )
    problems = _problems(text)
    assert "name: must be at most 256 characters (got 257)" in problems
    assert "streams[0].name: must be at most 256 characters (got 257)" in problems
    assert "program[0].label: must be at most 256 characters (got 257)" in problems
    assert "program[0].event: must be at most 256 characters (got 257)" in problems


def test_documented_top_level_texts_must_be_strings() -> None:
    assert _problems(H + '"program":[],"device":["h200"]}') == ["device: must be a string"]
    long_device = "d" * (d.MAX_DEVICE_CHARS + 1)
    assert _problems(H + f'"program":[],"device":"{long_device}"}}') == [
        "device: must be at most 4096 characters (got 4097)"
    ]
    # a 256-character device name loads: the simulator refuses it as an unknown device
    assert pipeline_from_json(H + '"program":[],"device":"' + "a" * 256 + '"}')


def test_100000_streams_are_refused_at_once() -> None:
    streams = ",".join(f'{{"name":"s{i}"}}' for i in range(100_000))
    t0 = time.perf_counter()
    problems = _problems(H + f'"streams":[{streams}],"program":[]}}')
    assert time.perf_counter() - t0 < 5.0  # the old duplicate check took 226 s
    assert problems == ["streams: 100000 streams: at most 1024"]


def test_too_many_ops_are_refused_before_checking_them() -> None:
    doc = {"format": "swimlanes-pipeline", "version": 1, "program": [{}] * (d.MAX_OPS + 1)}
    t0 = time.perf_counter()
    with pytest.raises(PipelineError) as info:
        pipeline_from_dict(doc)
    assert time.perf_counter() - t0 < 1.0
    assert [str(p) for p in info.value.problems] == [
        f"program: {d.MAX_OPS + 1} ops: at most {d.MAX_OPS}"
    ]


def test_the_duplicate_stream_check_is_linear() -> None:
    # 200,000 streams (past the limit, so checked below it): one pass with a set, not one
    # pass over the streams per stream (which took 226 s for 100,000).
    raw = [{"name": f"s{i % 50_000}"} for i in range(200_000)]
    c = Checker()
    t0 = time.perf_counter()
    streams = _parse_streams(c, raw)
    assert time.perf_counter() - t0 < 5.0
    assert len(streams) == 50_000 and len(c.problems) == 150_000
    assert str(c.problems[0]) == "streams[50000].name: duplicate stream name 's0'"


def test_new_stream_names_are_found_in_linear_time() -> None:
    doc = {"format": "swimlanes-pipeline", "version": 1, "program": [],
           "streams": [{"name": f"s{i}"} for i in range(1, d.MAX_STREAMS + 1)]}  # fmt: skip
    pipeline = pipeline_from_dict(doc)
    assert new_stream_name(pipeline) == f"s{d.MAX_STREAMS + 1}"


def test_problems_are_capped_with_a_count() -> None:
    doc = {"format": "swimlanes-pipeline", "version": 1, "program": [{"op": "x"}] * 1000}
    with pytest.raises(PipelineError) as info:
        pipeline_from_dict(doc)
    problems = info.value.problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert str(problems[-1]) == f"... and {1000 - MAX_PROBLEMS} more problems"


def test_messages_quote_long_values_briefly() -> None:
    (problem,) = _problems(H + '"program":[{"op":"' + "k" * 100_000 + '"}]}')
    # The message lists the op kinds (which grow); what is quoted of the value stays short.
    quoted = problem.replace(", ".join(d.OP_KINDS), "")
    assert len(quoted) < 200 and quoted.endswith("'... (100000 characters))")


# -- files that are not pipelines ----------------------------------------------------------------
def test_a_gzipped_trace_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "run.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    with pytest.raises(PipelineError) as info:
        load_pipeline(path)
    assert str(info.value) == (
        f"{path} is not a pipeline file (gzip-compressed data; open a trace with 'stats' or "
        "File > Open measurement)"
    )


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "a PNG image"),
        (b"PK\x03\x04zip", "a zip archive"),
        (b'{"a": "\xc3\x28"}', "binary data, not UTF-8 text (byte 7)"),
        ('{"a": 1}'.encode("utf-16"), "UTF-16 text: save it as UTF-8"),
    ],
)
def test_binary_files_are_named(tmp_path: Path, data: bytes, what: str) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(data)
    with pytest.raises(PipelineError, match=r"is not a pipeline file \((.*)\)$") as info:
        load_pipeline(path)
    assert str(info.value).endswith(f"({what})")


def test_a_folder_or_an_impossible_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PipelineError, match="is a folder, not a pipeline file"):
        load_pipeline(tmp_path)
    with pytest.raises(PipelineError, match="^cannot read "):
        load_pipeline(tmp_path / ("x" * 5000))
    with pytest.raises(PipelineError, match="^cannot read "):
        load_pipeline(str(tmp_path / "nul\0.json"))


def test_every_limit_refusal_still_loads_after_fixing(tmp_path: Path) -> None:
    """The largest values load, save and load again unchanged."""
    doc = {
        "format": "swimlanes-pipeline", "version": 1, "name": "n" * d.MAX_NAME_CHARS,
        "streams": [{"name": "s" * d.MAX_NAME_CHARS, "kind": "blocking", "priority": d.MIN_PRIORITY}],
        "program": [
            {"op": "h2d", "bytes": d.MAX_BYTES, "duration_us": d.MAX_DURATION_US},
            {"op": "kernel", "blocks": d.MAX_BLOCKS, "threads": 1024, "flops": d.MAX_FLOPS,
             "blocks_per_sm": d.MAX_BLOCKS_PER_SM},
            {"op": "kernel", "blocks": 1000, "threads": 1, "block_us": d.MAX_DURATION_US / 1000},
            {"op": "host", "duration_us": d.MAX_DURATION_US},
        ],
        "layout": {"big": d.MAX_JSON_INT, "small": d.MIN_JSON_INT, "x": 1.5e308},
    }  # fmt: skip
    path = tmp_path / "max.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    pipeline = load_pipeline(path)
    assert pipeline.to_dict() == doc
    assert math.isfinite(pipeline.extra["layout"]["x"])
