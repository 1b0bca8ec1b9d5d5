"""Pipeline files under a seeded fuzzer: ``swimlanes simulate FILE --json`` either refuses
cleanly (exit 2, ``error:`` lines) or gives a sane result, soon (see pipeline.py beside this
file; ``python tests/fuzz/pipeline.py 3000 SEED`` runs a longer campaign)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from pipeline import (  # tests/fuzz is on sys.path (no package)
    HANG_SECONDS,
    check_result,
    fuzz_pipeline,
    make_case,
    run_case,
)

import swimlanes.engine
from swimlanes.model.document import OP_KINDS
from swimlanes.timeline.timeline import NO_TIME


def test_fuzzed_pipelines_are_refused_cleanly_or_simulated() -> None:
    report = fuzz_pipeline(250, seed=12)
    assert [f.to_json() for f in report.failures] == []
    # both outcomes are exercised: refusals, and simulations that the checks looked at
    assert report.outcomes["refused"] > 50 and report.outcomes["simulated"] > 50
    assert report.slowest < HANG_SECONDS


def test_the_fuzzer_is_deterministic_in_its_seed() -> None:
    assert make_case(3, 17) == make_case(3, 17)
    assert make_case(3, 17) != make_case(3, 18)


def test_the_fuzzer_reports_an_escaped_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args, **kwargs):
        raise OverflowError("Python int too large to convert to C long")

    monkeypatch.setattr(swimlanes.engine, "simulate", broken)
    report = fuzz_pipeline(30, seed=12)
    assert report.failures and {f.kind for f in report.failures} == {"exception"}
    assert "OverflowError" in report.failures[0].detail


def test_the_fuzzer_reports_a_wrong_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    real = swimlanes.engine.simulate

    def wrong(pipeline, device="h200", **kwargs):
        timeline = real(pipeline, device, **kwargs)
        ran = (timeline.start != NO_TIME).nonzero()[0]
        if len(ran):  # an op that ends before it starts
            timeline.end[ran[-1]] = timeline.start[ran[-1]] - 5000
        return timeline

    monkeypatch.setattr(swimlanes.engine, "simulate", wrong)
    report = fuzz_pipeline(40, seed=12)
    assert report.failures and {f.kind for f in report.failures} == {"result"}


GOOD = {
    "makespan_us": 10.0,
    "ops": [
        {"index": 0, "stream": "s1", "issue_us": 0.0, "issue_end_us": 1.0, "start_us": 1.0,
         "end_us": 4.0},
        {"index": 1, "stream": "s1", "issue_us": 1.0, "issue_end_us": 2.0, "start_us": 4.0,
         "end_us": 10.0},
        {"index": 2, "stream": None, "issue_us": 2.0, "issue_end_us": 10.0, "start_us": None,
         "end_us": None},
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"makespan_us": 9.0}, "after the makespan"),
        ({"makespan_us": float("nan")}, "makespan_us is nan"),
        ({0: {"start_us": -1.0}}, "start -1.0"),
        ({1: {"start_us": 3.0}}, "before its stream's previous end"),
        ({1: {"end_us": 3.9, "start_us": 4.0}}, "ends at 3.9 before its start"),
        ({1: {"end_us": None}}, "start 4.0, end None"),
        ({2: {"issue_end_us": 1.0}}, "its call ends before it starts"),
    ],
)
def test_result_checks(change: dict, problem: str) -> None:
    assert check_result(GOOD) is None
    data = copy.deepcopy(GOOD)
    for key, value in change.items():
        if isinstance(key, int):
            data["ops"][key].update(value)
        else:
            data[key] = value
    assert problem in (check_result(data) or "")


def test_a_clean_refusal_and_a_result_are_told_apart(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"format": "swimlanes-pipeline", "version": 1, "program": [{"op": 1}]}')
    outcome, detail, _ = run_case(path, [])
    kinds = ", ".join(OP_KINDS)
    assert (outcome, detail) == ("refused", f"error: program[0].op: must be one of {kinds} (got 1)")
    path.write_text('{"format": "swimlanes-pipeline", "version": 1, "program": []}')
    assert run_case(path, ["--device", "ideal"])[:2] == ("simulated", "")
