"""Pipeline generators and the shipped example files built from them."""

from __future__ import annotations

import json
import re

import pytest

from swimlanes.model import load_pipeline, validate
from swimlanes.model.generators import (
    EXAMPLE_BUILDERS,
    bytes_for_us,
    chunked_pipeline,
    default_stream_trap_pipeline,
    example_pipeline,
    random_pipeline,
    swimming_pipeline,
)
from swimlanes.resources import example_names, example_path

EXPECTED_EXAMPLES = {
    "two-streams",
    "chunked-overlap",
    "default-stream-trap",
    "pageable-trap",
    "ping-pong",
    "breadth-vs-depth",
    "per-thread-default-stream",
    "event-dependency",
    "priority",
    "launch-bound",
    "swimming-in-streams",
    "swimming-in-streams-sync",
}
GB = 10**9


def test_bytes_for_us_matches_the_h200_pinned_rate() -> None:
    assert bytes_for_us(1000.0) == pytest.approx(55e6, rel=1e-3)
    assert bytes_for_us(1000.0) % 4096 == 0
    assert bytes_for_us(0.001) == 4096


def test_chunked_depth_first_issues_each_chunk_together() -> None:
    p = chunked_pipeline(4, 2)
    work = p.program[:-1]
    assert [op.op for op in work[:6]] == ["h2d", "kernel", "d2h", "h2d", "kernel", "d2h"]
    assert [op.stream for op in work] == ["s1"] * 3 + ["s2"] * 3 + ["s1"] * 3 + ["s2"] * 3
    assert [op.label for op in work[:3]] == ["H2D chunk 0", "K chunk 0", "D2H chunk 0"]
    assert p.program[-1].op == "device_sync"
    assert [s.name for s in p.streams] == ["s1", "s2"]


def test_chunked_breadth_first_issues_stage_by_stage() -> None:
    p = chunked_pipeline(4, 4, order="breadth")
    assert [op.op for op in p.program[:-1]] == ["h2d"] * 4 + ["kernel"] * 4 + ["d2h"] * 4
    assert [op.stream for op in p.program[:4]] == ["s1", "s2", "s3", "s4"]


def test_chunked_splits_the_whole_data_evenly() -> None:
    p = chunked_pipeline(8, 4, h2d_us=30000, kernel_us=20000, d2h_us=30000)
    h2d = [op for op in p.program if op.op == "h2d"]
    kernels = [op for op in p.program if op.op == "kernel"]
    assert [op.duration_us for op in h2d] == [3750.0] * 8
    assert [op.duration_us for op in kernels] == [2500.0] * 8
    assert sum(op.bytes or 0 for op in h2d) == pytest.approx(30000 * 55_000, rel=1e-3)
    assert validate(p) == []


def test_chunked_options_reach_the_ops() -> None:
    p = chunked_pipeline(2, 2, stream_kind="non_blocking", host_memory="pageable")
    assert {s.kind for s in p.streams} == {"non_blocking"}
    assert {op.host_memory for op in p.program if op.op in ("h2d", "d2h")} == {"pageable"}
    timed = chunked_pipeline(2, 2, copy_durations=False)
    assert all(op.duration_us is None for op in timed.program if op.op in ("h2d", "d2h"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_chunks": 0, "n_streams": 1}, "at least 1"),
        ({"n_chunks": 2, "n_streams": 2, "order": "sideways"}, "order must be one of"),
        ({"n_chunks": 2, "n_streams": 2, "host_memory": "locked"}, "host_memory must be"),
        ({"n_chunks": 2, "n_streams": 2, "stream_kind": "legacy_default"}, "stream_kind"),
    ],
)
def test_chunked_refuses_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        chunked_pipeline(**kwargs)


def test_default_stream_trap_puts_bookkeeping_on_the_legacy_default_stream() -> None:
    p = default_stream_trap_pipeline(n_batches=4)
    on_default = [op for op in p.program if op.stream_name == "default"]
    assert len(on_default) == 4 and all(op.op == "kernel" for op in on_default)
    assert {s.kind for s in default_stream_trap_pipeline("non_blocking").streams} == {
        "non_blocking"
    }


def test_swimming_variants_differ_only_in_copy_synchrony() -> None:
    fast, slow = swimming_pipeline(False), swimming_pipeline(True)
    assert len(fast.program) == len(slow.program)
    for a, b in zip(fast.program, slow.program, strict=True):
        if a.op in ("h2d", "d2h"):
            assert (a.is_async, b.is_async) == (True, False)
        else:
            assert a == b


def test_every_expected_example_is_shipped() -> None:
    assert set(example_names()) >= EXPECTED_EXAMPLES
    assert set(EXAMPLE_BUILDERS) == EXPECTED_EXAMPLES
    # The other shipped examples are the multi-GPU lessons, which a script in benchmarks/
    # builds (tests/test_examples_multi_gpu.py checks them against it).
    for name in set(example_names()) - EXPECTED_EXAMPLES:
        assert load_pipeline(example_path(name)).is_multi_device, name


@pytest.mark.parametrize("name", sorted(EXPECTED_EXAMPLES))
def test_shipped_example_matches_its_generator(name: str) -> None:
    shipped = load_pipeline(example_path(name))
    built = example_pipeline(name)
    assert shipped.name == built.name
    assert shipped.streams == built.streams
    assert shipped.program == built.program


@pytest.mark.parametrize("name", sorted(EXPECTED_EXAMPLES))
def test_shipped_example_carries_its_lesson(name: str) -> None:
    data = json.loads(example_path(name).read_text(encoding="utf-8"))
    assert set(data) >= {"description", "device", "lesson"}
    assert data["device"] in ("ideal", "h200")
    assert 5 <= len(data["lesson"]) <= 60
    sentences = re.findall(r"[^.!?]+[.!?](?:\s|$)", data["description"])
    assert 2 <= len(sentences) <= 4, sentences
    labelled = [op for op in data["program"] if op["op"] in ("h2d", "d2h", "kernel")]
    assert labelled and all(op.get("label") for op in labelled)


@pytest.mark.parametrize("name", sorted(EXPECTED_EXAMPLES))
def test_shipped_example_fits_a_real_gpu(name: str) -> None:
    p = load_pipeline(example_path(name))
    # Upper bound on device memory: every copy and memset with a buffer of its own.
    buffers = sum(op.bytes or 0 for op in p.program if op.op in ("h2d", "d2h", "d2d", "memset"))
    assert buffers < 8 * GB
    for op in p.program:
        if op.op == "kernel":
            assert op.threads is not None and op.threads % 32 == 0


def test_textbook_examples_time_every_op_exactly() -> None:
    for name in ("two-streams", "chunked-overlap"):
        for op in load_pipeline(example_path(name)).program:
            if op.op in ("h2d", "d2h", "kernel"):
                assert op.duration_us is not None, (name, op.label)
            if op.op in ("h2d", "d2h"):
                # On an H200 the copy takes about as long as the lesson says.
                assert op.bytes == pytest.approx(op.duration_us * 55_000, rel=0.01)


def test_example_pipeline_refuses_unknown_names() -> None:
    with pytest.raises(ValueError, match="no example generator named 'nope'"):
        example_pipeline("nope")


def test_random_pipeline_is_valid_varied_and_deterministic() -> None:
    p = random_pipeline(3000, n_streams=8, seed=7)
    assert validate(p) == []
    assert len(p.program) == 3000
    kinds = {op.op for op in p.program}
    assert kinds >= {"h2d", "d2h", "d2d", "memset", "kernel", "event_record", "event_wait"}
    assert any(op.stream_name == "default" for op in p.program)
    assert {s.kind for s in p.streams} == {"blocking", "non_blocking"}
    assert random_pipeline(3000, seed=7).program == p.program
    assert random_pipeline(3000, seed=8).program != p.program
