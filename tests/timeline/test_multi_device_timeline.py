"""A multi-device timeline's device columns and link usage: checked when built, saved and
read back only when set, exported to Chrome traces with a process per device."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from swimlanes.timeline.formats.chrome_trace import timeline_to_chrome_trace, write_chrome_trace
from swimlanes.timeline.formats.io import load_timelines_any
from swimlanes.timeline.synthetic import multi_device_timeline
from swimlanes.timeline.timeline import Timeline, TimelineBuilder


def _single() -> Timeline:
    b = TimelineBuilder([], [])
    b.add(index=0, kind="kernel", stream="s", engine="Compute", issue_start=0, issue_end=5,
          start=10, end=20)  # fmt: skip
    return b.build()


def test_a_single_device_timeline_has_no_device_keys() -> None:
    tl = _single()
    assert not tl.is_multi_device
    d = tl.to_dict()
    assert "devices" not in d and "links" not in d
    assert Timeline.from_dict(d).to_dict() == d


def test_a_multi_device_timeline_round_trips_through_json() -> None:
    tl = multi_device_timeline(4)
    assert tl.is_multi_device
    d = json.loads(json.dumps(tl.to_dict()))
    assert d["devices"]["names"] == ["gpu0", "gpu1", "gpu2", "gpu3"]
    back = Timeline.from_dict(d)
    assert back.to_dict() == tl.to_dict()
    assert back.host_device_name(1) == "gpu1"
    row = back.row_of_index(len(back) - 1)
    assert row is not None and back.links_of(row) == ["NVLink gpu3→gpu0"]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("host_device", np.zeros(2, np.int16), "host_device has 2 rows"),
        ("stream_device", np.zeros(1, np.int16), "stream_device has 1 rows"),
        ("engine_device", np.full(4, 9, np.int16), r"engine_device\[0\]: 9 is not an index"),
        ("link_id", np.zeros(1, np.int16), "link_op has"),
    ],
)
def test_bad_device_columns_are_refused(column: str, value: np.ndarray, message: str) -> None:
    tl = multi_device_timeline(2)
    kwargs = {f: getattr(tl, f) for f in tl.__dataclass_fields__}
    kwargs[column] = value
    with pytest.raises(ValueError, match=message):
        Timeline(**kwargs)


def test_device_columns_without_device_names_are_refused() -> None:
    tl = _single()
    with pytest.raises(ValueError, match="device_names is empty"):
        Timeline(**{**{f: getattr(tl, f) for f in tl.__dataclass_fields__},
                    "host_device": np.zeros(1, np.int16)})  # fmt: skip


def test_a_bad_device_index_in_a_file_names_its_path() -> None:
    d = multi_device_timeline(2).to_dict()
    d["devices"]["host"][3] = -1
    with pytest.raises(ValueError, match=r"devices\.host\[3\]"):
        Timeline.from_dict(d)


def test_chrome_trace_has_a_process_per_device_and_link_rows() -> None:
    tl = multi_device_timeline(3)
    doc = timeline_to_chrome_trace([tl])
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {1: "Simulated (3x-h200-nvlink) gpu0", 10: "Simulated (3x-h200-nvlink) gpu1",
                     11: "Simulated (3x-h200-nvlink) gpu2"}  # fmt: skip
    rows = {(e["pid"], e["args"]["name"]) for e in events if e.get("name") == "thread_name"}
    assert (10, "NVLink gpu1→gpu2") in rows and (10, "host thread") in rows
    assert (11, "gpu2 comm") in rows and (1, "gpu0 Compute engine") in rows
    # Each op's "op" event lies in its own device's process.
    pid_of = {"gpu0": 1, "gpu1": 10, "gpu2": 11}
    ops = [e for e in events if e.get("cat") == "op"]
    assert len(ops) == len(tl)
    assert all(e["pid"] == pid_of[e["args"]["device"]] for e in ops)
    assert len([e for e in events if e.get("cat") == "link"]) == len(tl.link_op)


def test_a_single_device_chrome_trace_keeps_its_shape() -> None:
    doc = timeline_to_chrome_trace([_single()])
    assert doc["otherData"]["timelines"] == [
        {"pid": 1, "name": "", "source": "simulated", "device": ""}
    ]
    assert {e["pid"] for e in doc["traceEvents"]} == {1}


def test_a_multi_device_chrome_trace_reads_back_as_one_timeline(tmp_path: Path) -> None:
    tl = multi_device_timeline(2)
    path = tmp_path / "multi.json"
    write_chrome_trace([tl], path)
    (back,), _ = load_timelines_any(path)
    assert back.device_names == ["gpu0", "gpu1"]
    assert back.host_device.tolist() == tl.host_device.tolist()
    assert [back.stream_names[s] for s in back.stream.tolist()] == [
        tl.stream_names[s] for s in tl.stream.tolist()
    ]
    assert _links(back) == _links(tl)


def _links(tl: Timeline) -> list[tuple[int, str]]:
    """Which row used which link, by name."""
    names = [tl.link_names[k] for k in tl.link_id.tolist()]
    return sorted(zip(tl.link_op.tolist(), names, strict=True))


def test_a_simulated_multi_device_timeline_exports_and_lists_its_devices(tmp_path: Path) -> None:
    from swimlanes.engine import simulate
    from swimlanes.model.document import Communicator, Device, Op, Pipeline, Stream

    pipeline = Pipeline(
        name="pair",
        devices=[Device("gpu0"), Device("gpu1")],
        communicators=[Communicator("world", ["gpu0", "gpu1"])],
        streams=[Stream("a", device="gpu0"), Stream("b", device="gpu1")],
        program=[
            Op("peer_copy", stream="a", dst_device="gpu1", bytes=1 << 20),
            Op("all_reduce", stream="a", communicator="world", bytes=1 << 20),
            Op("all_reduce", stream="b", communicator="world", bytes=1 << 20),
        ],
    )
    tl = simulate(pipeline, "2x-h200-nvlink")
    assert [row["device"] for row in tl.ops_json()] == ["gpu0", "gpu0", "gpu1"]
    assert "device" not in _single().ops_json()[0]
    write_chrome_trace([tl], tmp_path / "pair.json")
    (back,), _ = load_timelines_any(tmp_path / "pair.json")
    assert back.device_names == ["gpu0", "gpu1"]
    assert back.start.tolist() == (tl.start - tl.t0).tolist()
    assert sorted(back.link_names) == ["NVLink gpu0→gpu1", "NVLink gpu1→gpu0"]
