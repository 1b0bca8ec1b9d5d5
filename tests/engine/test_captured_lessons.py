"""The captured lessons (real programs captured on an H200, resources/captures): they ship with
their measurements, and the what-ifs their descriptions suggest do what they say on h200."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

from swimlanes.cli import main
from swimlanes.engine import get_preset, simulate
from swimlanes.model.document import Pipeline
from swimlanes.model.io import load_pipeline
from swimlanes.model.op_defaults import host_memory_changes
from swimlanes.model.validate import validate
from swimlanes.resources import capture_names, example_path, measurements_dir, programs_dir

H200 = get_preset("h200")


def _lesson(name: str) -> Pipeline:
    return load_pipeline(example_path(name))


def _ms(p: Pipeline) -> float:
    return simulate(p, H200).makespan_ns / 1e6


def _set_memory(p: Pipeline, kind: str, memory: str) -> None:
    """Every ``kind`` copy's host memory set as the inspector sets it (which drops the times
    the copy was measured with in its old memory)."""
    for op in p.program:
        if op.op == kind:
            for key, value in host_memory_changes(op, memory).items():
                setattr(op, key, value)


def test_the_shipped_lessons_are_their_captures_rebuilt_today() -> None:
    """A change to how captures are rebuilt must rebuild the lessons too
    (``python benchmarks/make_captured_lessons.py``)."""
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "make_captured_lessons", root / "benchmarks" / "make_captured_lessons.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.stale(root) == []


@pytest.mark.parametrize("name", capture_names())
def test_a_captured_lesson_ships_with_its_measurement_and_program(name: str) -> None:
    p = _lesson(name)
    validate(p)
    assert p.extra["device"] == "h200" and p.extra["lesson"] and p.extra["description"]
    assert (measurements_dir() / f"{name}.h200.json").is_file()
    program = p.extra["description"].split("resources/programs/")
    assert len(program) == 1 or (programs_dir() / program[1].split(")")[0]).is_file()


def test_pinning_pytorchs_cpu_tensors_takes_the_h2d_stalls_away() -> None:
    p = _lesson("captured-pytorch-streams")
    pinned = copy.deepcopy(p)
    _set_memory(pinned, "h2d", "pinned")
    assert _ms(pinned) < 0.7 * _ms(p)


def test_the_blocking_version_becomes_the_non_blocking_one_when_edited() -> None:
    blocking = _lesson("captured-pytorch-streams-blocking")
    edited = copy.deepcopy(blocking)
    edited.program = [op for op in edited.program if op.op != "stream_sync"]
    _set_memory(edited, "d2h", "pinned")
    non_blocking = _ms(_lesson("captured-pytorch-streams"))
    assert _ms(edited) < 0.7 * _ms(blocking)
    assert _ms(edited) == pytest.approx(non_blocking, rel=0.2)


def test_a_pageable_buffer_stalls_the_cupy_copy() -> None:
    p = _lesson("captured-cupy-streams")
    pageable = copy.deepcopy(p)
    _set_memory(pageable, "h2d", "pageable")
    assert _ms(pageable) > 3 * _ms(p)


def test_examples_lists_them_and_compare_uses_their_measurement(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["examples"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in capture_names())
    assert main(["compare", "captured-cupy-streams", "--no-calibrate", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["device_measured"] == "NVIDIA H200" and out["pipeline"] == "captured-cupy-streams"
    assert out["compared"] == 11 and out["only_measured"] == []  # every measured op has its op
    assert abs(out["makespan_error_pct"]) < 5
