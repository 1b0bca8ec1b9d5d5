"""Multi-device runs on real GPUs (`pytest -m gpu`; skipped where there is none): each new op
on one GPU (a peer copy to itself, each collective over a communicator of one device), and,
where the machine has two GPUs or more, peer copies both ways and the collectives over two.
NCCL's results are checked on the device (``meta["data_check"]``) and every op is timed.
"""

from __future__ import annotations

import os

import pytest

from swimlanes.model.validate import pipeline_from_dict
from swimlanes.timeline.timeline import NO_TIME, Timeline

pytestmark = pytest.mark.gpu
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off

MB = 1 << 20
COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "broadcast")


def gpus() -> int:
    from swimlanes.gpu.backend import device_count

    return device_count()


def doc(devices: int, program: list[dict]) -> dict:
    names = [f"gpu{d}" for d in range(devices)]
    return {
        "format": "swimlanes-pipeline",
        "version": 1,
        "name": f"{devices} GPUs",
        "devices": [{"name": n} for n in names],
        "communicators": [{"name": "world", "devices": names}],
        "streams": [{"name": f"s{d}", "device": n} for d, n in enumerate(names)],
        "program": program,
    }


def run(devices: int, program: list[dict], backend: str = "auto") -> Timeline:
    from swimlanes.gpu.executor import execute

    return execute(pipeline_from_dict(doc(devices, program)), repeat=3, warmup=1, backend=backend)


def check_measured(tl: Timeline) -> None:
    assert tl.source == "measured"
    check = tl.meta["data_check"]
    assert check["ok"] and check["checked"] > 0, check
    for r in range(len(tl)):
        if tl.op_kind(r) in ("peer_copy", *COLLECTIVES):
            assert tl.start[r] != NO_TIME and tl.end[r] > tl.start[r], (tl.labels[r], tl.meta)
    assert not tl.meta.get("cupti_unmatched"), tl.meta["cupti_unmatched"]


@pytest.mark.parametrize("backend", ["cupti", "events"])
def test_each_new_op_on_one_gpu(backend: str) -> None:
    program = [{"op": "peer_copy", "stream": "s0", "bytes": 64 * MB}]
    program += [
        {"op": k, "stream": "s0", "bytes": 16 * MB, "communicator": "world"} for k in COLLECTIVES
    ]
    program.append({"op": "device_sync"})
    tl = run(1, program, backend)
    check_measured(tl)
    assert tl.meta["nccl"].count(".") == 2  # NCCL's version, e.g. 2.27.7
    assert tl.engine_names[tl.engine[0]] == "gpu0 Compute" and len(tl.link_op) == 0


@pytest.mark.skipif("gpus() < 2", reason="needs 2 GPUs")
@pytest.mark.parametrize("backend", ["cupti", "events"])
def test_two_gpus(backend: str) -> None:
    program = [
        {"op": "peer_copy", "stream": "s0", "bytes": 256 * MB, "src_device": "gpu0",
         "dst_device": "gpu1"},
        {"op": "peer_copy", "stream": "s1", "bytes": 256 * MB, "src_device": "gpu1",
         "dst_device": "gpu0"},
    ]  # fmt: skip
    for k in COLLECTIVES:
        program += [
            {"op": k, "stream": f"s{d}", "bytes": 64 * MB, "communicator": "world"} for d in (0, 1)
        ]
    program += [{"op": "device_sync"}, {"op": "device_sync", "device": "gpu1"}]
    tl = run(2, program, backend)
    check_measured(tl)
    assert tl.device_names == ["gpu0", "gpu1"]
    assert len(tl.link_names) == 2 and tl.link_names[0].endswith("gpu0→gpu1")
    rate = 256 * MB / (int(tl.end[0]) - int(tl.start[0]))  # GB/s
    assert rate > 10, rate  # NVLink or PCIe 4/5: far above a staged copy through the host
    # Both ranks of one all-reduce overlap in time (the kernels wait for each other).
    a, b = 2, 3
    assert tl.start[a] < tl.end[b] and tl.start[b] < tl.end[a]
    if backend == "cupti":
        assert sorted(tl.meta["cupti_devices"].values()) == ["gpu0", "gpu1"]
        # NCCL's kernels timed the collectives (ncclDevKernel_AllReduce_Sum_f32_RING_LL...).
        assert any("AllReduce" in k for k in tl.meta["collective_kernels"]["all_reduce"])


def test_more_devices_than_present_are_refused() -> None:
    from swimlanes.gpu.errors import GpuError

    n = gpus() + 1
    with pytest.raises(GpuError, match=f"names {n} devices"):
        run(n, [{"op": "device_sync"}])


@pytest.mark.skipif("gpus() < 2", reason="needs 2 GPUs")
def test_a_wait_issued_before_the_other_devices_record_still_waits_for_it() -> None:
    """gpu1's thread reaches its wait ~3 ms before gpu0's thread records the event: the wait
    still holds gpu1's kernel until gpu0's kernel before the record is done."""
    program = [
        {"op": "host", "duration_us": 3000, "device": "gpu0"},
        {"op": "kernel", "stream": "s0", "blocks": 132, "threads": 256, "block_us": 1000},
        {"op": "event_record", "stream": "s0", "event": "done"},
        {"op": "event_wait", "stream": "s1", "event": "done"},
        {"op": "kernel", "stream": "s1", "blocks": 1, "threads": 32, "block_us": 10},
        {"op": "event_sync", "event": "done", "device": "gpu1"},
        {"op": "device_sync", "device": "gpu1"},
        {"op": "device_sync"},
    ]
    tl = run(2, program)
    assert tl.issue_end[3] < tl.issue_start[2]  # the wait was issued first
    assert tl.start[4] >= tl.end[1]  # and still held gpu1's kernel
    assert tl.issue_end[5] >= tl.end[1]  # the host sync waited for the event too
