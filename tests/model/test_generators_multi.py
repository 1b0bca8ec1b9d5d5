"""The random multi-device pipelines: valid, deterministic, and covering what the
multi-device engine must handle."""

from __future__ import annotations

from collections import Counter

import pytest

from swimlanes.model import pipeline_from_dict, pipeline_from_json, pipeline_to_json
from swimlanes.model.document import COLLECTIVE_OPS
from swimlanes.model.generators import random_multi_device_pipeline


@pytest.mark.parametrize("seed", range(12))
def test_every_seed_gives_a_valid_pipeline_that_saves_and_loads(seed: int) -> None:
    pipeline = random_multi_device_pipeline(400, seed=seed)
    text = pipeline_to_json(pipeline)
    assert pipeline_to_json(pipeline_from_json(text)) == text
    assert 2 <= len(pipeline.devices) <= 8
    assert len(pipeline.program) >= 400


def test_the_same_seed_gives_the_same_pipeline_and_another_seed_another() -> None:
    a = pipeline_to_json(random_multi_device_pipeline(300, 4, seed=7))
    assert a == pipeline_to_json(random_multi_device_pipeline(300, 4, seed=7))
    assert a != pipeline_to_json(random_multi_device_pipeline(300, 4, seed=8))


def test_it_holds_every_multi_device_feature() -> None:
    pipeline = random_multi_device_pipeline(2000, 4, seed=1)
    kinds = Counter(op.op for op in pipeline.program)
    assert kinds["peer_copy"] and kinds["kernel"] and kinds["event_wait"]
    assert all(kinds[k] for k in COLLECTIVE_OPS)
    used = {op.communicator for op in pipeline.program if op.communicator}
    assert "world" in used and len(used) >= 3  # sub-communicators too
    record_device = {}
    crossing = 0
    for op in pipeline.program:
        if op.op == "event_record":
            record_device[op.event] = pipeline.op_device(op)
        elif op.op == "event_wait" and record_device.get(op.event) != pipeline.op_device(op):
            crossing += 1
    assert crossing > 0, "no event waited for on another device"
    issuing = {pipeline.op_device(op) for op in pipeline.program}
    assert issuing == set(pipeline.device_names)


@pytest.mark.parametrize("n", [2, 3, 8])
def test_the_device_count_can_be_chosen(n: int) -> None:
    pipeline = random_multi_device_pipeline(200, n, streams_per_device=3, seed=n)
    assert pipeline.device_names == [f"gpu{d}" for d in range(n)]
    assert len(pipeline.streams) == 4 * n
    pipeline_from_dict(pipeline.to_dict())
