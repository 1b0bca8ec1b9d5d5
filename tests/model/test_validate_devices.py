"""Loading a multi-device pipeline: devices, communicators, each stream's and op's device,
peer copies and collectives, and the collective calls that must match across devices."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from swimlanes.model import PipelineError, pipeline_from_dict, pipeline_to_json, validate
from swimlanes.model.document import MAX_DEVICES

MB = 1 << 20

BASE: dict[str, Any] = {
    "format": "swimlanes-pipeline",
    "version": 1,
    "name": "two gpus",
    "streams": [
        {"name": "s0", "kind": "non_blocking", "priority": 0, "device": "gpu0"},
        {"name": "s1", "kind": "non_blocking", "priority": 0, "device": "gpu1"},
        {"name": "comm1", "kind": "non_blocking", "priority": -1, "device": "gpu1"},
    ],
    "program": [
        {"op": "kernel", "stream": "s0", "duration_us": 50, "blocks": 8, "threads": 256},
        {"op": "kernel", "stream": "s1", "duration_us": 50, "blocks": 8, "threads": 256},
        {"op": "all_reduce", "stream": "s0", "bytes": 25 * MB, "communicator": "world"},
        {"op": "all_reduce", "stream": "comm1", "bytes": 25 * MB, "communicator": "world"},
        {
            "op": "peer_copy",
            "stream": "s0",
            "bytes": MB,
            "src_device": "gpu0",
            "dst_device": "gpu1",
        },
        {"op": "broadcast", "stream": "s1", "bytes": MB, "communicator": "world", "root": "gpu1"},
        {"op": "broadcast", "stream": "s0", "bytes": MB, "communicator": "world", "root": "gpu1"},
        {"op": "device_sync", "device": "gpu1"},
        {"op": "device_sync"},
    ],
    "devices": [{"name": "gpu0"}, {"name": "gpu1"}],
    "communicators": [{"name": "world", "devices": ["gpu0", "gpu1"]}],
}


def _doc(**changes: Any) -> dict[str, Any]:
    """BASE with top-level keys replaced; ``op_N`` replaces program[N], ``stream_N`` streams[N]."""
    doc = copy.deepcopy(BASE)
    for key, value in changes.items():
        if key.startswith("op_"):
            doc["program"][int(key[3:])] = value
        elif key.startswith("stream_"):
            doc["streams"][int(key[7:])] = value
        else:
            doc[key] = value
    return doc


def _problems(doc: Any) -> list[str]:
    with pytest.raises(PipelineError) as info:
        pipeline_from_dict(doc)
    return [str(p) for p in info.value.problems]


def test_a_two_device_pipeline_loads_with_its_devices() -> None:
    pipeline = pipeline_from_dict(copy.deepcopy(BASE))
    assert pipeline.device_names == ["gpu0", "gpu1"] and pipeline.is_multi_device
    assert pipeline.communicator("world").devices == ["gpu0", "gpu1"]
    assert [pipeline.op_device(op) for op in pipeline.program] == [
        "gpu0", "gpu1", "gpu0", "gpu1", "gpu0", "gpu1", "gpu0", "gpu1", "gpu0",
    ]  # fmt: skip
    copy_op = pipeline.program[4]
    assert (copy_op.src_device, copy_op.dst_device) == ("gpu0", "gpu1")
    assert pipeline.program[5].root == "gpu1"
    assert validate(pipeline) == []


def test_it_saves_back_as_it_was_written() -> None:
    doc = _doc(x_tool={"layout": 1})
    doc["devices"][1]["note"] = "the second GPU"
    doc["communicators"][0]["x_algo"] = "ring"
    text = json.dumps(doc, indent=2) + "\n"
    assert pipeline_to_json(pipeline_from_dict(json.loads(text))) == text


def test_without_devices_the_one_device_is_gpu0() -> None:
    doc = {
        "format": "swimlanes-pipeline",
        "version": 1,
        "name": "one",
        "streams": [{"name": "s0", "kind": "blocking", "priority": 0, "device": "gpu0"}],
        "program": [
            {"op": "all_reduce", "stream": "s0", "bytes": 4096, "communicator": "solo"},
            {"op": "peer_copy", "stream": "s0", "bytes": 4096},
            {"op": "host", "duration_us": 1, "device": "gpu0"},
        ],
        "communicators": [{"name": "solo", "devices": ["gpu0"]}],
    }
    text = json.dumps(doc, indent=2) + "\n"
    pipeline = pipeline_from_dict(json.loads(text))
    assert pipeline.device_names == ["gpu0"] and not pipeline.is_multi_device
    assert pipeline_to_json(pipeline) == text
    doc["streams"][0]["device"] = "gpu1"
    assert _problems(doc)[0] == (
        "streams[0].device: names no declared device ('gpu1'): a file without \"devices\" has "
        "one device, 'gpu0'"
    )


CASES = [
    # (document changes, the exact problem expected among those reported)
    ({"devices": []}, 'devices: must be a non-empty list of {"name": ...} objects (leave it out '
                      "for one device named 'gpu0')"),
    ({"devices": {"gpu0": {}}}, 'devices: must be a non-empty list of {"name": ...} objects '
                                "(leave it out for one device named 'gpu0')"),
    ({"devices": [{"name": f"g{i}"} for i in range(MAX_DEVICES + 1)]},
     f"devices: {MAX_DEVICES + 1} devices: at most {MAX_DEVICES}"),
    ({"devices": [{"name": "gpu0"}, {"name": "gpu0"}]},
     "devices[1].name: duplicate device name 'gpu0'"),
    ({"devices": [{"name": "gpu0"}, "gpu1"]}, 'devices[1]: must be an object ({"name": ...})'),
    ({"devices": [{"name": "gpu0"}, {"name": " "}]}, "devices[1].name: must be a non-empty string"),
    ({"devices": [{"name": "gpu0"}, {}]}, "devices[1].name: is required (a non-empty string)"),
    ({"communicators": [{"name": "world", "devices": ["gpu0", "gpu2"]}]},
     "communicators[0].devices[1]: names no declared device ('gpu2'): declare it in \"devices\""),
    ({"communicators": [{"name": "world", "devices": ["gpu0", "gpu0"]}]},
     "communicators[0].devices[1]: 'gpu0' is already a member"),
    ({"communicators": [{"name": "world", "devices": []}]},
     "communicators[0].devices: is required (a non-empty list of device names)"),
    ({"communicators": [{"name": "world", "devices": ["gpu0", "gpu1"]},
                        {"name": "world", "devices": ["gpu1"]}]},
     "communicators[1].name: duplicate communicator name 'world'"),
    ({"communicators": "world"},
     'communicators: must be a list of {"name": ..., "devices": [...]} objects'),
    ({"stream_1": {"name": "s1", "device": "gpu7"}},
     "streams[1].device: names no declared device ('gpu7'): declare it in \"devices\""),
    ({"stream_1": {"name": "default", "kind": "legacy_default", "device": "gpu1"}},
     "streams[1].device: 'default' is the legacy default stream of the first device, gpu0: "
     "name gpu1's legacy default stream otherwise"),
    ({"stream_1": {"name": "legacy0", "kind": "legacy_default", "device": "gpu0"}},
     "streams[1].kind: the legacy default stream must be named 'default'"),
    ({"stream_1": {"name": "legacy1", "kind": "legacy_default", "device": "gpu1"},
      "stream_2": {"name": "again1", "kind": "legacy_default", "device": "gpu1"}},
     "streams[2].kind: gpu1 already has a legacy default stream ('legacy1')"),
    ({"op_7": {"op": "device_sync", "device": "gpu3"}},
     "program[7].device: names no declared device ('gpu3'): declare it in \"devices\""),
    ({"op_0": {"op": "kernel", "stream": "s0", "blocks": 8, "threads": 256, "duration_us": 50,
               "device": "gpu0"}},
     "program[0].device: only host-only ops (host, event_sync, device_sync, malloc, free) take "
     "this (a stream op is issued by its stream's device)"),
    ({"op_4": {"op": "peer_copy", "stream": "s0", "bytes": MB, "dst_device": "gpu9"}},
     "program[4].dst_device: names no declared device ('gpu9'): declare it in \"devices\""),
    ({"op_4": {"op": "peer_copy", "stream": "s0", "bytes": MB, "src_device": "gpu1",
               "dst_device": "gpu1"}},
     "program[4]: a peer copy from gpu1 to gpu1 is enqueued on stream 's0' of gpu0: enqueue it "
     "on a stream of either end"),
    ({"op_4": {"op": "peer_copy", "stream": "s0", "dst_device": "gpu1"}},
     "program[4].bytes: is required (a positive integer)"),
    ({"op_4": {"op": "h2d", "stream": "s0", "bytes": MB, "src_device": "gpu1"}},
     "program[4].src_device: only peer copies take this"),
    ({"op_2": {"op": "all_reduce", "stream": "s0", "bytes": MB}},
     "program[2].communicator: is required (a non-empty string)"),
    ({"op_2": {"op": "all_reduce", "stream": "s0", "bytes": MB, "communicator": "nccl"}},
     "program[2].communicator: names no declared communicator ('nccl')"),
    ({"op_2": {"op": "all_reduce", "stream": "s0", "bytes": MB, "communicator": "world",
               "root": "gpu0"}},
     "program[2].root: only broadcasts take this"),
    ({"op_5": {"op": "broadcast", "stream": "s1", "bytes": MB, "communicator": "world",
               "root": "gpu2"}},
     "program[5].root: 'gpu2' is not a member of communicator 'world'"),
    ({"communicators": [{"name": "world", "devices": ["gpu0", "gpu1"]},
                        {"name": "half", "devices": ["gpu1"]}],
      "op_8": {"op": "all_gather", "stream": "s0", "bytes": MB, "communicator": "half"}},
     "program[8]: its stream 's0' is on gpu0, which is not a member of communicator 'half' "
     "(gpu1)"),
    ({"op_8": {"op": "all_gather", "stream": "s0", "bytes": MB, "communicator": "world"}},
     "program[8]: all_gather on communicator 'world' is call 3 of gpu0 but gpu1 makes only 2 "
     "calls on it (NCCL would hang)"),
    ({"op_3": {"op": "all_reduce", "stream": "comm1", "bytes": 2 * MB, "communicator": "world"}},
     "program[3]: all_reduce of 2097152 bytes on communicator 'world' is call 1 of gpu1, but "
     "call 1 of gpu0 (program[2]) is all_reduce of 26214400 bytes: every member must make the "
     "same calls (NCCL would hang)"),
    ({"op_6": {"op": "broadcast", "stream": "s0", "bytes": MB, "communicator": "world"}},
     "program[5]: broadcast of 1048576 bytes from gpu1 on communicator 'world' is call 2 of "
     "gpu1, but call 2 of gpu0 (program[6]) is broadcast of 1048576 bytes from gpu0: every "
     "member must make the same calls (NCCL would hang)"),
    ({"op_6": {"op": "kernel", "stream": "s0", "blocks": 1, "threads": 32, "duration_us": 1}},
     "program[5]: broadcast on communicator 'world' is call 2 of gpu1 but gpu0 makes only 1 "
     "call on it (NCCL would hang)"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "expected"), CASES, ids=[c[1][:50] for c in CASES])
def test_each_rule_names_the_path_and_the_reason(changes: dict[str, Any], expected: str) -> None:
    assert expected in _problems(_doc(**changes))


def test_collectives_are_matched_only_once_the_ops_are_valid() -> None:
    # A refused op is no call at all: its communicator's calls are not reported as unmatched.
    doc = _doc(op_3={"op": "all_reduce", "stream": "comm1", "bytes": 0, "communicator": "world"})
    assert _problems(doc) == ["program[3].bytes: must be a positive integer"]


def test_a_collective_on_the_default_stream_is_the_first_devices() -> None:
    doc = _doc(op_2={"op": "all_reduce", "bytes": 25 * MB, "communicator": "world"})
    pipeline = pipeline_from_dict(doc)
    assert pipeline.op_device(pipeline.program[2]) == "gpu0"


def test_device_keys_are_not_kept_as_unknown_keys() -> None:
    pipeline = pipeline_from_dict(copy.deepcopy(BASE))
    assert all(not op.extra for op in pipeline.program)
    assert all(not s.extra for s in pipeline.streams)


def test_a_refused_stream_is_reported_once_not_again_by_every_op_on_it() -> None:
    from swimlanes.model.validate import PipelineError, pipeline_from_dict

    doc = {
        "format": "swimlanes-pipeline", "version": 1,
        "devices": [{"name": "gpu0"}, {"name": "gpu1"}],
        "streams": [{"name": "a", "device": "gpuX"}, {"name": "b", "device": "gpu1"}],
        "program": [{"op": "kernel", "stream": "a", "blocks": 1, "threads": 32,
                     "duration_us": 5}] * 3,
    }  # fmt: skip
    with pytest.raises(PipelineError) as err:
        pipeline_from_dict(doc)
    assert [p.path for p in err.value.problems] == ["streams[0].device"]
