"""Trace import and ``swimlanes stats`` under a seeded fuzzer (see traces.py beside this file):
every mutated trace, run or timeline gives a result or a clean ``error:``, never a traceback."""

from __future__ import annotations

import json
import random

from traces import check_stats, fuzz_traces, mutate_text, mutate_value, seed_documents


def test_fuzzed_traces_give_a_result_or_a_clean_error() -> None:
    assert fuzz_traces(250, seed=20240611) == []


def test_the_seeds_cover_every_kind_of_input() -> None:
    names = [name for name, _ in seed_documents()]
    for kind in ("export", "run", "timeline"):
        assert any(n.startswith(kind) for n in names), kind
    assert any(n.endswith("+ measured") for n in names)  # two timelines in one trace


def test_mutations_are_deterministic_in_the_seed() -> None:
    _, text = seed_documents()[-1]
    for mutate in (mutate_text, mutate_value):
        assert mutate(random.Random(5), text) == mutate(random.Random(5), text)
        assert mutate(random.Random(5), text)[0] != text


def test_check_stats_catches_an_inconsistent_summary() -> None:
    one = {"name": "t", "ops": 3, "host_only_ops": 0, "makespan_us": 10.0,
           "streams": [{"ops": 2, "busy_us": 4.0}], "engines": {},
           "overlap": {"total_us": 0.0}}  # fmt: skip
    assert "do not add up" in check_stats(json.dumps({**one, "timelines": [one]}))
    good = {**one, "ops": 2}
    assert check_stats(json.dumps({**good, "timelines": [good]})) is None
    late = {**good, "streams": [{"ops": 2, "busy_us": 11.0}]}
    assert "outside" in check_stats(json.dumps({**late, "timelines": [late]}))
