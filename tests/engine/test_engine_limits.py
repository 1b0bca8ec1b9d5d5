"""The simulator's limits: every pipeline ends soon with a correct answer or a ValueError that
names the op and the limit; never an overflow, a stall, a hang or a wrong answer (the "bounds
everywhere" issue's reproducers that reach the engine)."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from swimlanes.engine import DevicePreset, get_preset, load_preset, plan_model, simulate
from swimlanes.engine.simulator import SimulationRangeError
from swimlanes.model.document import MAX_DURATION_US, Op, Pipeline, Stream
from swimlanes.model.validate import validate


def _kernels(*durations_us: float, stream: str = "s1") -> Pipeline:
    ops = [Op("kernel", stream=stream, blocks=1, threads=32, duration_us=d) for d in durations_us]
    return Pipeline("k", [Stream("s1")], ops)


# -- times past the clock ----------------------------------------------------------------------
def test_two_kernels_of_9e15_us_are_refused_not_answered_wrongly() -> None:
    """Was: exit 0 with a makespan of 21.6 us. The validator refuses 9e15 us; a pipeline built
    in memory, past the validator, is refused by the simulator, naming the op."""
    pipeline = _kernels(9e15, 9e15)
    assert validate(pipeline)
    with pytest.raises(ValueError, match=r"^program\[0\]: this kernel takes 9e\+15 us on h200"):
        simulate(pipeline, "h200")


def test_two_host_ops_of_9e15_us_are_refused_not_stalled() -> None:
    """Was: RuntimeError("simulation stalled"), which the code said cannot happen."""
    pipeline = Pipeline("h", [], [Op("host", duration_us=9e15), Op("host", duration_us=9e15)])
    with pytest.raises(ValueError, match=r"^program\[0\]: this host takes 9e\+15 us"):
        simulate(pipeline, "ideal")


def test_ops_at_the_limit_give_the_right_answer() -> None:
    timeline = simulate(_kernels(MAX_DURATION_US, MAX_DURATION_US), "ideal")
    makespan_ns = int(timeline.end.max() - timeline.issue_start.min())
    assert makespan_ns == 2 * round(MAX_DURATION_US * 1000)
    host = Pipeline("h", [], [Op("host", duration_us=MAX_DURATION_US)] * 3)
    assert int(simulate(host, "ideal").issue_end[-1]) == 3 * round(MAX_DURATION_US * 1000)


def test_the_clock_is_guarded_past_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the plan's checks lifted, times past 2**62 ns are still refused (the loop's last
    line of defence), never answered wrongly or reported as a stall."""
    monkeypatch.setattr(plan_model, "MAX_OP_NS", 1 << 63)
    monkeypatch.setattr(plan_model, "MAX_TOTAL_NS", 1 << 64)
    host = [Op("host", duration_us=3e15), Op("host", duration_us=3e15)]
    for pipeline in (_kernels(3e15, 3e15), Pipeline("h", [], [*host, Op("host", duration_us=1)])):
        with pytest.raises(SimulationRangeError, match="clock range"):
            simulate(pipeline, "ideal")
    # 6e18 ns still fits in int64: the answer, when there is one, is right
    assert simulate(Pipeline("h", [], host), "ideal").issue_end.tolist() == [3 * 10**18, 6 * 10**18]


def test_the_whole_program_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_model, "MAX_TOTAL_NS", 10**13)
    with pytest.raises(
        ValueError,
        match=r"^program: its ops one after another take 2.001e\+10 us .* \(0.000317 years\)",
    ):
        simulate(_kernels(MAX_DURATION_US / 100, *[MAX_DURATION_US] * 20), "ideal")


@pytest.mark.parametrize(
    ("op", "what"),
    [
        (Op("h2d", bytes=1 << 40, host_memory="pageable"), "h2d"),
        (Op("memset", bytes=1 << 40), "memset"),
        (Op("kernel", blocks=1, threads=32, flops=1e15), "kernel"),
        (Op("kernel", blocks=1, threads=32, bytes=1 << 40), "kernel"),
    ],
)
def test_times_a_preset_derives_are_checked(op: Op, what: str) -> None:
    slow = DevicePreset(
        name="slow", h2d_pageable_gbps=1e-3, memory_gbps=1e-3, peak_tflops=1e-6
    )  # a preset may hold any positive rate: its times are checked per op
    with pytest.raises(ValueError, match=rf"^program\[0\]: this {what} takes .* on slow: the "):
        simulate(Pipeline("p", [], [op]), slow)
    tiny = DevicePreset(name="tiny", h2d_pageable_gbps=1e-300, memory_gbps=1e-300)
    with pytest.raises(ValueError, match="takes forever on tiny"):
        simulate(Pipeline("p", [], [Op("h2d", bytes=1 << 40, host_memory="pageable")]), tiny)


# -- work: blocks, streams -------------------------------------------------------------------
def test_a_huge_grid_is_refused_before_simulating() -> None:
    """Was a hang: 1e9 blocks took 1.6 s, 1e12 over 30 s (one event per wave)."""
    pipeline = Pipeline("g", [], [Op("kernel", blocks=(1 << 31) - 1, threads=1024, duration_us=1)])
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"^program\[0\]\.blocks: the kernels need 8134408 "):
        simulate(pipeline, "h200")
    assert time.perf_counter() - t0 < 2.0


def test_the_wave_budget_counts_every_kernel() -> None:
    one = Op("kernel", blocks=264 * 600_000, threads=1024, duration_us=1)  # 600,000 waves
    assert simulate(Pipeline("a", [], [one]), "h200").end[0] > 0
    with pytest.raises(ValueError, match=r"1200000 waves .*1200000 of them for the 2 kernels"):
        simulate(Pipeline("b", [], [one, one.copy()]), "h200")


def test_the_budget_of_stream_checks() -> None:
    streams = [Stream(f"s{k}") for k in range(1024)]
    ops = [Op("kernel", stream=s.name, blocks=1, threads=32, duration_us=1) for s in streams]
    legacy = [Op("kernel", blocks=1, threads=32, duration_us=1) for _ in range(20_000)]
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"^program: 20000 ops on the legacy default stream"):
        simulate(Pipeline("s", streams, ops + legacy), "h200")
    assert time.perf_counter() - t0 < 2.0


def test_blocks_per_sm_must_be_an_integer_in_range() -> None:
    for bad in ([1], 1e309, True, 0, 4096):
        op = Op("kernel", blocks=8, threads=32, duration_us=1, extra={"blocks_per_sm": bad})
        with pytest.raises(ValueError, match=r"^program\[0\]\.blocks_per_sm: must be an integer"):
            simulate(Pipeline("p", [], [op]), "h200")
    op = Op("kernel", blocks=8, threads=32, duration_us=1, extra={"blocks_per_sm": 1})
    assert simulate(Pipeline("p", [], [op]), "h200").end[0] > 0


# -- device presets ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["a" * 256, "b" * 5000, "x/" * 3000 + "p.json", "nul\0name", "nul\0.json", "\udcff"]
)
def test_odd_device_names_are_a_clear_error(name: str) -> None:
    with pytest.raises(ValueError, match=r"^(unknown device|no preset file) ") as info:
        get_preset(name)
    assert len(str(info.value)) < 300


def _preset_file(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "gpu.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


HEAD = '{"format": "swimlanes-device", "version": 1, "name": "x", '


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEAD + '"max_blocks_per_sm": [1]}', "max_blocks_per_sm: must be an integer"),
        (HEAD + '"max_blocks_per_sm": 1e309}', "max_blocks_per_sm: must be an integer (got inf)"),
        (HEAD + '"sm_count": ' + "9" * 5000 + "}", "sm_count: must be an integer"),
        (HEAD + '"sm_count": 10000000}', "sm_count: must be at most 1048576"),
        (HEAD + '"copy_engines_per_direction": 1000000}', "copy_engines_per_direction: must be"),
        (HEAD + '"issue_cost_us": {"kernel": 1e300}}', "issue_cost_us.kernel: must be a number"),
        (HEAD + '"kernel_launch_latency_us": NaN}', "kernel_launch_latency_us: must be a number"),
        (HEAD + '"bidirectional_slowdown": 1e9}', "bidirectional_slowdown: must be a number"),
        (HEAD + '"h2d_pinned_gbps": 1e300}', "h2d_pinned_gbps: must be a positive number"),
        (HEAD + '"sync_return_us": {"stream_sync": [1]}}', "sync_return_us.stream_sync: must"),
        (HEAD + '"bandwidth_table": {"h2d_pinned": [[1, "x"]]}}', "bandwidth_table.h2d_pinned"),
        (HEAD + '"description": ' + json.dumps("d" * 70000) + "}", "description: must be at"),
        (HEAD + '"x": ' + "[" * 5000 + "]" * 5000 + "}", "nested deeper than 64 levels"),
        (gzip.compress(b"{}"), "is not a device preset file (gzip-compressed data)"),
        (b"\x00\xff\xfe binary", "is not a device preset file (binary data"),
    ],
)
def test_bad_preset_files_are_a_clear_error(
    tmp_path: Path, text: str | bytes, message: str
) -> None:
    with pytest.raises(ValueError) as info:
        load_preset(_preset_file(tmp_path, text))
    assert message in str(info.value)
    assert len(str(info.value)) < 400
