"""The compiled event loop (engine/core) and the Python loop give identical Timelines.

Every column, the dependency edges, the SMs-busy step function and the metadata must agree
exactly, on every shipped example on every preset, on random pipelines on redrawn presets
(Fermi queues, shared and multiple copy engines, completion groups, dependency latencies), on
the benchmark's random mix, with ``adjust_plan`` (prediction bands), and in what they refuse.
Each comparison checks that the compiled loop really ran (``compiled_runs``), so that a silent
fall-back to the Python loop fails the test.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import device_presets, pipelines, wide_pipelines

from swimlanes.engine import DevicePreset, plan_model, preset_names, simulate
from swimlanes.engine import core as compiled_core
from swimlanes.engine.bands import simulate_band
from swimlanes.engine.core import prepare
from swimlanes.engine.errors import SimulationCancelled
from swimlanes.engine.multi import needs_multi_device
from swimlanes.engine.simulator import SimulationRangeError, _Run
from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.model.io import load_pipeline
from swimlanes.timeline.timeline import Timeline

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_engine import make_random_pipeline  # noqa: E402

#: The single-device examples (several devices or host threads go to engine/multi.py).
EXAMPLES = [
    pipeline
    for path in sorted((Path(__file__).parents[2] / "resources" / "examples").glob("*.json"))
    if not needs_multi_device(pipeline := load_pipeline(path))
]
PRESETS = preset_names()
ARRAYS = (
    "index", "kind", "stream", "engine", "issue_start", "issue_end", "start", "end", "solo_ns",
    "bytes", "dep_src", "dep_dst", "dep_kind", "occupancy_time", "occupancy_sms",
)  # fmt: skip
OTHERS = ("labels", "stream_names", "engine_names", "sm_count", "source", "device", "name", "meta")


def differences(python: Timeline, compiled: Timeline) -> list[str]:
    """What differs, one line per field (dtype, shape and every value; edges in order)."""
    out = []
    for name in ARRAYS:
        a, b = getattr(python, name), getattr(compiled, name)
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
            rows = np.flatnonzero(a != b)[:5].tolist() if a.shape == b.shape else "shape"
            out.append(f"{name}: python {a.tolist()[:20]} compiled {b.tolist()[:20]} ({rows})")
    for name in OTHERS:
        if getattr(python, name) != getattr(compiled, name):
            out.append(f"{name}: {getattr(python, name)!r} != {getattr(compiled, name)!r}")
    return out


def run_with(engine: str, fn: Callable[[], object]) -> object:
    """``fn()`` with SWIMLANES_ENGINE set; with "compiled", it must have run compiled."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(compiled_core.ENGINE_VARIABLE, engine)
        before = compiled_core.compiled_runs()
        out = fn()
        ran = compiled_core.compiled_runs() - before
    assert ran > 0 if engine == "compiled" else ran == 0, f"{engine}: {ran} compiled runs"
    return out


def assert_same(pipeline: Pipeline, preset: str | DevicePreset) -> None:
    python = run_with("python", lambda: simulate(pipeline, preset))
    compiled = run_with("compiled", lambda: simulate(pipeline, preset))
    assert isinstance(python, Timeline) and isinstance(compiled, Timeline)
    problems = differences(python, compiled)
    assert not problems, f"{pipeline.name} on {preset}:\n" + "\n".join(problems)


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """SWIMLANES_ENGINE=compiled, and the Python loop fails if it runs."""
    monkeypatch.setenv(compiled_core.ENGINE_VARIABLE, "compiled")

    def no_python_loop(self: _Run) -> None:
        raise AssertionError("the Python loop ran")

    monkeypatch.setattr(_Run, "loop", no_python_loop)
    yield


# -- identical timelines -------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_every_example_on_every_preset(preset: str) -> None:
    assert len(EXAMPLES) >= 10
    for pipeline in EXAMPLES:
        assert_same(pipeline, preset)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipeline=pipelines(), preset=st.one_of(st.sampled_from(PRESETS), device_presets()))
def test_random_pipelines_on_redrawn_presets(pipeline: Pipeline, preset: object) -> None:
    assert isinstance(preset, str | DevicePreset)
    assert_same(pipeline, preset)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipeline=wide_pipelines(), preset=st.one_of(st.sampled_from(PRESETS), device_presets()))
def test_wide_pipelines_with_ties_on_redrawn_presets(pipeline: Pipeline, preset: object) -> None:
    """Many streams (shared hardware queues, "queue" edges), equal sizes and times."""
    assert isinstance(preset, str | DevicePreset)
    assert_same(pipeline, preset)


@pytest.mark.parametrize(("seed", "preset"), [(0, "h200"), (1, "c2050"), (2, "k20c"), (3, "a100")])
def test_the_benchmarks_random_mix(seed: int, preset: str) -> None:
    assert_same(make_random_pipeline(2000, seed=seed), preset)


def test_prediction_bands_adjust_the_plan_alike() -> None:
    """simulate_band perturbs each sample's plan through adjust_plan."""
    pipeline = make_random_pipeline(300, seed=4)

    def band() -> object:
        return simulate_band(pipeline, "h200", samples=16, seed=3)

    python, compiled = run_with("python", band), run_with("compiled", band)
    assert vars(python).keys() == vars(compiled).keys()
    for name, value in vars(python).items():
        other = vars(compiled)[name]
        same = np.array_equal(value, other) if isinstance(value, np.ndarray) else value == other
        assert same, name


# -- cancel, progress, limits ---------------------------------------------------------------------
def _kernels(n: int) -> Pipeline:
    program = [
        Op("kernel", stream=f"s{k % 4}", blocks=1, threads=32, duration_us=1.0) for k in range(n)
    ]
    return Pipeline(name="big", streams=[Stream(f"s{k}") for k in range(4)], program=program)


@pytest.mark.usefixtures("forced")
def test_cancel_stops_the_compiled_loop() -> None:
    calls: list[int] = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(SimulationCancelled, match="simulation cancelled"):
        simulate(_kernels(100_000), "h200", cancel=cancel)
    assert len(calls) == 3


@pytest.mark.usefixtures("forced")
def test_progress_of_the_compiled_loop() -> None:
    seen: list[float] = []
    before = compiled_core.compiled_runs()
    simulate(_kernels(100_000), "h200", progress=seen.append)
    assert compiled_core.compiled_runs() == before + 1
    assert 3 <= len(seen) <= 101
    assert seen == sorted(seen) and seen[-1] == 1.0 and 0.0 < seen[-2] < 1.0


def test_times_past_the_clock_are_refused_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the plan's limits lifted, the compiled loop hands a run whose times reach 2**62 ns
    to the Python loop, which refuses it (the same message) or answers it."""
    monkeypatch.setattr(plan_model, "MAX_OP_NS", 1 << 63)
    monkeypatch.setattr(plan_model, "MAX_TOTAL_NS", 1 << 64)
    kernels = Pipeline(
        "k", [Stream("s1")], [Op("kernel", stream="s1", blocks=1, threads=32, duration_us=3e15)] * 2
    )
    host = [Op("host", duration_us=3e15), Op("host", duration_us=3e15)]
    for pipeline in (kernels, Pipeline("h", [], [*host, Op("host", duration_us=1)])):
        messages = []
        for engine in ("python", "compiled"):
            monkeypatch.setenv(compiled_core.ENGINE_VARIABLE, engine)
            with pytest.raises(SimulationRangeError, match="clock range") as info:
                simulate(pipeline, "ideal")
            messages.append(str(info.value))
        assert messages[0] == messages[1]
    monkeypatch.setenv(compiled_core.ENGINE_VARIABLE, "compiled")
    assert simulate(Pipeline("h", [], host), "ideal").issue_end.tolist() == [3 * 10**18, 6 * 10**18]


def test_the_compiled_loop_hands_times_reaching_the_clocks_end_to_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inputs inside the compiled core's range whose times reach 2**62 ns during the run: it
    stops, undoes its columns and the Python loop answers (or refuses) instead."""
    monkeypatch.setattr(plan_model, "MAX_OP_NS", 1 << 63)
    monkeypatch.setattr(plan_model, "MAX_TOTAL_NS", 1 << 64)
    undone: list[int] = []
    real_reset = prepare.reset_outputs

    def reset(state: prepare.State) -> None:
        undone.append(1)
        real_reset(state)

    monkeypatch.setattr(prepare, "reset_outputs", reset)
    host = Pipeline("h", [], [Op("host", duration_us=2e15)] * 3)  # 2e18 ns each
    kernels = Pipeline(
        "k", [Stream("s1")], [Op("kernel", stream="s1", blocks=1, threads=32, duration_us=2e15)] * 3
    )
    expected = run_with("python", lambda: simulate(host, "ideal"))
    monkeypatch.setenv(compiled_core.ENGINE_VARIABLE, "compiled")
    before = compiled_core.compiled_runs()
    got = simulate(host, "ideal")
    assert compiled_core.compiled_runs() == before and len(undone) == 1  # it handed over
    assert isinstance(expected, Timeline)
    assert got.issue_end.tolist() == [2 * 10**18, 4 * 10**18, 6 * 10**18]
    assert not differences(expected, got)
    with pytest.raises(SimulationRangeError, match="clock range") as compiled:
        simulate(kernels, "ideal")
    assert len(undone) == 2
    monkeypatch.setenv(compiled_core.ENGINE_VARIABLE, "python")
    with pytest.raises(SimulationRangeError, match="clock range") as python:
        simulate(kernels, "ideal")
    assert str(compiled.value) == str(python.value)


# -- choosing the loop ----------------------------------------------------------------------------
def test_auto_picks_the_loop_by_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto``: compiled from AUTO_MIN_OPS ops on before the compiled loop has run in this
    process (if numba has it cached; AUTO_MIN_OPS_FEW_SHAPES when the pipeline repeats a few op
    shapes), from AUTO_MIN_OPS_WARM once it has; SWIMLANES_ENGINE=python always Python."""
    monkeypatch.setattr(compiled_core, "AUTO_MIN_OPS", 500)
    monkeypatch.setattr(compiled_core, "AUTO_MIN_OPS_WARM", 150)
    small, middle, large = (make_random_pipeline(n, seed=5) for n in (100, 200, 600))
    monkeypatch.setitem(compiled_core._counts, "compiled", 0)  # cold
    run_with("auto", lambda: simulate(middle, "h200"))
    assert compiled_core.compiled_runs() == 0
    # Without numba's cache of the loop, even a large pipeline runs in Python: compiling it
    # first would take far longer than the Python loop does.
    monkeypatch.setattr(compiled_core, "cache_ready", lambda: False)
    run_with("auto", lambda: simulate(large, "h200"))
    assert compiled_core.compiled_runs() == 0
    monkeypatch.setattr(compiled_core, "cache_ready", lambda: True)
    # A pipeline of few op shapes runs faster in Python: its threshold is higher.
    monkeypatch.setattr(compiled_core, "AUTO_MIN_OPS_FEW_SHAPES", 10_000)
    run_with(
        "auto",
        lambda: simulate(Pipeline("same", [Stream("s")], [Op("h2d", "s", bytes=64)] * 600), "h200"),
    )
    assert compiled_core.compiled_runs() == 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(compiled_core.ENGINE_VARIABLE, "auto")
        simulate(large, "h200")
        assert compiled_core.compiled_runs() == 1
        simulate(middle, "h200")  # warm now
        assert compiled_core.compiled_runs() == 2
        simulate(small, "h200")
        assert compiled_core.compiled_runs() == 2
    run_with("python", lambda: simulate(large, "h200"))


def test_a_broken_core_falls_back_to_python_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object) -> object:
        raise RuntimeError("no compiler")

    pipeline = make_random_pipeline(200, seed=6)
    expected = run_with("python", lambda: simulate(pipeline, "h200"))
    monkeypatch.setitem(compiled_core._loaded, "chunk", broken)
    monkeypatch.setitem(compiled_core._loaded, "warned", set())
    monkeypatch.setenv(compiled_core.ENGINE_VARIABLE, "compiled")
    with caplog.at_level(logging.WARNING, logger=compiled_core.__name__):
        got = simulate(pipeline, "h200")
    assert isinstance(expected, Timeline)
    assert not differences(expected, got)
    assert "compiled simulator core failed" in caplog.text


@pytest.mark.usefixtures("forced")
def test_an_error_in_a_callback_is_the_callers() -> None:
    """An exception from ``progress`` propagates as in the Python loop, and does not turn the
    compiled loop off."""

    def progress(fraction: float) -> None:
        if fraction > 0.0:
            raise KeyError("stop here")

    before = compiled_core.compiled_runs()
    with pytest.raises(KeyError, match="stop here"):
        simulate(_kernels(100_000), "h200", progress=progress)
    simulate(_kernels(1000), "h200")
    assert compiled_core.compiled_runs() == before + 1


def test_the_loop_is_cached_once_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a compiled run numba's cache on disk holds the loop's machine code: ``auto``
    may use it in a new process without compiling."""
    run_with("compiled", lambda: simulate(make_random_pipeline(50, seed=2), "h200"))
    monkeypatch.delitem(compiled_core._loaded, "chunk")  # as a new process sees it
    assert compiled_core.cache_ready()
    from swimlanes.engine.core.loop import run_chunk

    index = run_chunk._cache._cache_file._index_path
    assert Path(index).is_file()
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: p != index and real_exists(p))
    assert not compiled_core.cache_ready()  # no index of the loop: not cached


def test_the_app_fills_the_cache_in_a_process_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[list[str]] = []

    class Popen:
        def __init__(self, argv: list[str], **kwargs: object) -> None:
            assert kwargs.get("start_new_session") is True
            started.append(argv)

    monkeypatch.setattr(subprocess, "Popen", Popen)
    monkeypatch.delitem(compiled_core._loaded, "chunk", raising=False)
    monkeypatch.setenv(compiled_core.ENGINE_VARIABLE, "python")
    assert not compiled_core.start_warming() and not started
    monkeypatch.setenv(compiled_core.ENGINE_VARIABLE, "auto")
    assert compiled_core.start_warming()
    assert started == [[sys.executable, "-m", "swimlanes.engine.core.warm"]]


def test_the_warm_up_process_compiles_only_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from swimlanes.engine.core import warm

    compiled: list[int] = []
    monkeypatch.setattr(warm, "compile_once", lambda: compiled.append(1) or True)
    monkeypatch.setattr(os, "nice", lambda n: 0)
    monkeypatch.setattr(compiled_core, "cache_ready", lambda: True)
    assert warm.main() == 0 and compiled == []
    monkeypatch.setattr(compiled_core, "cache_ready", lambda: False)
    assert warm.main() == 0 and compiled == [1]
