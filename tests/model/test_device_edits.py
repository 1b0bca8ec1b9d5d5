"""Undo-able edits of devices and communicators, and of ops on several devices: each applies,
reverts to the exact document, and refuses what would make the document invalid."""

from __future__ import annotations

import pytest

from swimlanes.model import Pipeline, pipeline_from_dict, validate
from swimlanes.model.edits import (
    AddCommunicator,
    AddDevice,
    Edit,
    EditError,
    InsertOps,
    MoveOps,
    RemoveCommunicator,
    RemoveDevice,
    RemoveOps,
    RenameDevice,
    SetCommunicator,
    SetOpFields,
    SetStreamDevice,
    new_op,
    new_ops,
)

MIB = 1 << 20


def single() -> Pipeline:
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": "one",
            "streams": [{"name": "s1"}],
            "program": [{"op": "kernel", "stream": "s1", "blocks": 4, "threads": 64,
                         "duration_us": 5}],
        }
    )  # fmt: skip


def two_gpus() -> Pipeline:
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": "two",
            "streams": [{"name": "s0", "device": "gpu0"}, {"name": "s1", "device": "gpu1"},
                        {"name": "spare", "device": "gpu1"}],
            "program": [
                {"op": "all_reduce", "stream": "s0", "bytes": MIB, "communicator": "world"},
                {"op": "all_reduce", "stream": "s1", "bytes": MIB, "communicator": "world"},
                {"op": "peer_copy", "stream": "s1", "bytes": MIB, "src_device": "gpu1",
                 "dst_device": "gpu0"},
                {"op": "host", "duration_us": 3, "device": "gpu1"},
            ],
            "devices": [{"name": "gpu0"}, {"name": "gpu1"}],
            "communicators": [{"name": "world", "devices": ["gpu0", "gpu1"]}],
        }
    )  # fmt: skip


def roundtrip(p: Pipeline, edit: Edit) -> dict:
    """Apply, revert (the exact document again), redo (the same result again)."""
    before = p.to_dict()
    edit.apply(p)
    after = p.to_dict()
    assert validate(p) == []
    edit.revert(p)
    assert p.to_dict() == before
    edit.apply(p)
    assert p.to_dict() == after
    return after


def test_adding_a_device_to_a_single_device_document_declares_gpu0_first() -> None:
    p = single()
    doc = roundtrip(p, AddDevice("gpu1"))
    assert doc["devices"] == [{"name": "gpu0"}, {"name": "gpu1"}]
    assert p.is_multi_device


def test_renaming_a_device_renames_it_everywhere() -> None:
    p = two_gpus()
    doc = roundtrip(p, RenameDevice("gpu1", "right"))
    assert [d["name"] for d in doc["devices"]] == ["gpu0", "right"]
    assert [s.get("device") for s in doc["streams"]] == ["gpu0", "right", "right"]
    assert doc["communicators"][0]["devices"] == ["gpu0", "right"]
    assert doc["program"][2]["src_device"] == "right" and doc["program"][3]["device"] == "right"


def test_renaming_the_implicit_device_declares_it_under_its_new_name() -> None:
    p = single()
    assert roundtrip(p, RenameDevice("gpu0", "h200"))["devices"] == [{"name": "h200"}]


def test_a_device_in_use_is_not_removed_and_the_refusal_says_what_uses_it() -> None:
    p = two_gpus()
    before = p.to_dict()
    with pytest.raises(EditError) as info:
        RemoveDevice("gpu1").apply(p)
    assert str(info.value) == (
        "gpu1 is used by 2 streams (s1, spare), 3 ops, communicator world: move or remove them "
        "first"
    )
    assert p.to_dict() == before


def test_an_unused_device_is_removed() -> None:
    p = two_gpus()
    AddDevice("gpu2").apply(p)
    assert roundtrip(p, RemoveDevice("gpu2"))["devices"] == [{"name": "gpu0"}, {"name": "gpu1"}]


def test_moving_a_stream_to_another_device() -> None:
    p = two_gpus()
    assert roundtrip(p, SetStreamDevice("spare", "gpu0"))["streams"][2]["device"] == "gpu0"
    # s1 holds gpu1's all-reduce and its end of the peer copy: it cannot leave gpu1.
    with pytest.raises(EditError, match="not a member|either end|NCCL would hang"):
        SetStreamDevice("s1", "gpu0").apply(p)
    with pytest.raises(EditError, match="no device named 'gpu7'"):
        SetStreamDevice("spare", "gpu7").apply(p)


def test_communicators_are_added_edited_and_removed() -> None:
    p = two_gpus()
    doc = roundtrip(p, AddCommunicator("solo", ["gpu1"]))
    assert doc["communicators"][1] == {"name": "solo", "devices": ["gpu1"]}
    doc = roundtrip(p, SetCommunicator("world", new_name="all"))
    assert doc["communicators"][0]["name"] == "all"
    assert [op.get("communicator") for op in doc["program"][:2]] == ["all", "all"]
    with pytest.raises(EditError, match="used by 2 collectives"):
        RemoveCommunicator("all").apply(p)
    roundtrip(p, RemoveCommunicator("solo"))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (AddDevice("gpu1"), "there is already a device named 'gpu1'"),
        (AddDevice(" x"), "cannot start or end with spaces"),
        (RenameDevice("gpu5", "x"), "there is no device named 'gpu5'"),
        (AddCommunicator("world", ["gpu0"]), "there is already a communicator named 'world'"),
        (AddCommunicator("c", []), "needs at least one device"),
        (AddCommunicator("c", ["gpu0", "gpu0"]), "a member of a communicator once"),
        (SetCommunicator("world", devices=["gpu0"]), "not a member of communicator 'world'"),
        (RemoveCommunicator("nope"), "no communicator named 'nope'"),
    ],
)
def test_device_edits_refuse_with_a_reason(edit: Edit, message: str) -> None:
    p = two_gpus()
    before = p.to_dict()
    with pytest.raises(EditError, match=message):
        edit.apply(p)
    assert p.to_dict() == before


def test_one_collective_alone_is_refused_and_all_members_together_are_taken() -> None:
    p = two_gpus()
    op = new_op("all_gather", p, "s0")
    assert (op.bytes, op.communicator) == (25 * MIB, "world")
    with pytest.raises(EditError, match="gpu1 makes only 1 call on it"):
        InsertOps(2, [op]).apply(p)
    ops = new_ops("all_gather", p, "s0")
    assert [o.stream for o in ops] == ["s0", "s1"]
    doc = roundtrip(p, InsertOps(2, ops))
    assert [o["op"] for o in doc["program"][2:4]] == ["all_gather", "all_gather"]


def test_removing_or_resizing_one_members_call_is_refused() -> None:
    p = two_gpus()
    with pytest.raises(EditError, match="NCCL would hang"):
        RemoveOps([p.program[1].uid]).apply(p)
    with pytest.raises(EditError, match="every member must make the same calls"):
        SetOpFields(p.program[1].uid, {"bytes": 2 * MIB}).apply(p)
    roundtrip(p, RemoveOps([p.program[0].uid, p.program[1].uid]))


def test_new_multi_device_ops_get_their_devices() -> None:
    p = two_gpus()
    copy = new_op("peer_copy", p, "s1")
    assert (copy.bytes, copy.src_device, copy.dst_device) == (64 * MIB, None, "gpu0")
    assert new_op("device_sync", p, "s1").device == "gpu1"
    assert new_op("device_sync", p, "s0").device is None
    assert new_op("peer_copy", single(), "s1").dst_device is None  # one device: a local copy
    retyped = two_gpus()
    SetOpFields(retyped.program[3].uid, {"op": "device_sync"}).apply(retyped)
    assert retyped.program[3].device == "gpu1"
    SetOpFields(retyped.program[2].uid, {"op": "d2d"}).apply(retyped)
    assert (retyped.program[2].src_device, retyped.program[2].dst_device) == (None, None)
    SetOpFields(retyped.program[2].uid, {"op": "peer_copy"}).apply(retyped)
    assert retyped.program[2].dst_device == "gpu0"


def test_a_single_device_document_keeps_its_shape_under_op_edits() -> None:
    p = single()
    before = p.to_dict()
    InsertOps(1, [new_op("device_sync", p)]).apply(p)
    assert set(p.to_dict()) == set(before)
    assert "device" not in p.program[1].to_dict()


def test_moving_host_work_to_another_devices_thread() -> None:
    p = two_gpus()
    host = p.program[3]
    after = roundtrip(p, MoveOps([host.uid], 0, device="gpu0"))
    assert after["program"][0] == {"op": "host", "duration_us": 3, "device": "gpu0"}
    with pytest.raises(EditError, match="no device named 'gpu9'"):
        MoveOps([host.uid], 0, device="gpu9").apply(p)
