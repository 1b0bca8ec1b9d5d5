"""A default stream (legacy or per-thread) runs at the default priority whatever the document
says: CUDA creates it without one (the executor records priority 0 for it). Measured on the
fidelity benchmark's random pipelines (H200 and H100 hosts, 2026-11-24 and 2026-11-25): the
kernels of a per-thread default stream marked -1 started after those of created priority -1
streams and in arrival order with the priority 0 ones (``fid-0294``, every data set)."""

from __future__ import annotations

import pytest
from test_compiled_core import run_with

from swimlanes.engine import get_preset, simulate
from swimlanes.engine.reference import simulate_reference
from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.timeline.timeline import Timeline

MS = 1_000_000
IDEAL = get_preset("ideal")
FULL = 1024  # blocks of 256 threads that fill the ideal GPU exactly (128 SMs x 8)


def urgent_after_long(kind: str, name: str) -> Pipeline:
    """A two-wave kernel on a priority 0 stream, then (0.5 ms later) a one-wave kernel on a
    stream of ``kind`` that the document marks priority -1. (The first stream is non-blocking,
    so that the legacy default stream does not wait for its kernel.)"""
    streams = [Stream("low", "non_blocking", priority=0), Stream(name, kind, priority=-1)]
    program = [
        Op("kernel", stream="low", blocks=2 * FULL, threads=256, block_us=1000),
        Op("host", duration_us=500),
        Op("kernel", stream=name, blocks=FULL, threads=256, block_us=1000),
    ]
    return Pipeline(name="urgent after long", streams=streams, program=program)


def spans(tl: Timeline) -> list[tuple[int, int]]:
    return [(int(tl.start[r]), int(tl.end[r])) for r in (0, 2)]


SIMULATORS = {
    "python": lambda p: run_with("python", lambda: simulate(p, IDEAL)),
    "compiled": lambda p: run_with("compiled", lambda: simulate(p, IDEAL)),
    "reference": lambda p: simulate_reference(p, IDEAL),
}


@pytest.mark.parametrize("simulator", SIMULATORS)
@pytest.mark.parametrize(
    ("kind", "name"), [("per_thread_default", "worker"), ("legacy_default", "default")]
)
def test_a_default_stream_has_the_default_priority(simulator: str, kind: str, name: str) -> None:
    tl = SIMULATORS[simulator](urgent_after_long(kind, name))
    assert isinstance(tl, Timeline)
    # The low kernel's second wave goes first: the default stream's kernel waits behind it.
    assert spans(tl) == [(0, 2 * MS), (2 * MS, 3 * MS)]


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_a_created_stream_keeps_its_priority(simulator: str) -> None:
    tl = SIMULATORS[simulator](urgent_after_long("blocking", "urgent"))
    assert isinstance(tl, Timeline)
    # Its blocks take the SMs when the low kernel's first wave ends, before its second wave.
    assert spans(tl) == [(0, 3 * MS), (1 * MS, 2 * MS)]
