"""The multi-device executor under numba's CUDA simulator (no GPU needed): peer copies and
collectives run with real data on the host, every device gets its own host thread and
resources, and the measured timeline carries the multi-device fields.

The scenarios run once, in a child process with NUMBA_ENABLE_CUDASIM=1 (numba reads it at
import), so this module never changes how other tests in this process see CUDA.
"""

from __future__ import annotations

import pytest
from sim_child import run_under_simulator


@pytest.fixture(scope="module")
def sim() -> dict:
    return run_under_simulator("multi_sim_scenarios.py")


def test_peer_copies_and_an_all_reduce_give_the_right_data(sim: dict) -> None:
    two = sim["two_devices"]
    assert two["data_check"]["ok"] and two["data_check"]["checked"] == 4
    check = two["data_check"]["ops"]
    # all_reduce over 2 ranks of (rank + 1): 1 + 2 = 3 everywhere, on both devices.
    assert check["4"] == {"expected": [3.0, 3.0], "got": [3.0, 3.0], "ok": True}
    assert check["5"]["got"] == [3.0, 3.0]
    # Peer copies carry their source device's fill (position + 1) to the other device.
    assert check["2"]["got"] == [1.0, 1.0] and check["6"]["got"] == [2.0, 2.0]
    assert two["live"] == [0, 0]  # every buffer, stream and event of both devices released


def test_every_collective_computes_its_result(sim: dict) -> None:
    check = sim["every_collective"]["data_check"]["ops"]
    assert all(c["ok"] for c in check.values()), check
    assert check["0"]["got"] == [3.0, 3.0]  # reduce_scatter: each rank's slice of the sum
    assert check["2"]["got"] == [1.0, 2.0]  # all_gather: rank 0's slice, then rank 1's
    assert check["4"]["got"] == [2.0, 2.0]  # broadcast from gpu1 (rank 1 holds 2.0)


def test_each_device_issues_its_own_ops_on_its_own_thread(sim: dict) -> None:
    two = sim["two_devices"]
    assert two["backends"] == 2
    gpu0, gpu1 = two["calls"]
    kinds = {"h2d", "kernel", "peer_copy", "all_reduce", "device_sync"}

    def issued(calls: list[list]) -> list[str]:
        ops = [c for c in calls if c[0] in kinds]
        return [c[0] for c in ops if c[0] == "device_sync" or c[1] in ("s0", "s1")]

    # One warm-up and two timed repetitions, each in program order on its own device.
    assert issued(gpu0) == ["h2d", "peer_copy", "all_reduce", "device_sync"] * 3
    assert issued(gpu1) == ["h2d", "kernel", "all_reduce", "peer_copy", "device_sync"] * 3
    assert two["host_device"] == [0, 1, 0, 1, 0, 1, 1, 1, 0]
    assert ["enable_peer_access", 1] in gpu0 and ["enable_peer_access", 0] in gpu1


def test_the_timeline_has_the_multi_device_fields(sim: dict) -> None:
    two = sim["two_devices"]
    assert two["device_names"] == ["gpu0", "gpu1"]
    assert two["stream_names"] == ["default", "s0", "s1"]
    assert two["stream_device"] == [0, 0, 1]
    assert two["engine_names"][:3] == ["gpu0 H2D", "gpu0 D2H", "gpu0 Compute"]
    assert two["engine_device"] == [0, 0, 0, 1, 1, 1]
    # A peer copy runs on its source's D2H engine; a collective on its device's compute.
    assert two["engine"][2] == "gpu0 D2H" and two["engine"][6] == "gpu1 D2H"
    assert two["engine"][4] == "gpu0 Compute" and two["engine"][5] == "gpu1 Compute"
    assert two["link_names"] == ["Link gpu0→gpu1", "Link gpu1→gpu0"]
    assert [2, "Link gpu0→gpu1"] in two["links"] and [6, "Link gpu1→gpu0"] in two["links"]
    ring = [link for row, link in two["links"] if row == 4]
    assert ring == ["Link gpu0→gpu1", "Link gpu1→gpu0"]  # the all-reduce's ring, both ways


def test_both_ranks_of_a_collective_are_timed(sim: dict) -> None:
    two = sim["two_devices"]
    for row in (2, 4, 5):
        assert two["end"][row] >= two["start"][row] > -(2**62), two["labels"][row]


def test_a_single_device_runs_peer_copy_to_itself_and_collectives_of_one(sim: dict) -> None:
    one = sim["one_device"]
    assert one["rows"] == 5 and one["device_names"] == ["gpu0"]
    assert one["data_check"]["ok"] and one["data_check"]["checked"] == 5
    assert one["engine"] == ["gpu0 Compute"] * 5 and one["links"] == []
    assert one["live"] == [0]


def test_more_devices_than_the_machine_has_is_refused_before_anything_runs(sim: dict) -> None:
    refused = sim["too_many_devices"]
    assert refused["error"] == (
        "this pipeline names 3 devices (gpu0, gpu1, gpu2) but this machine has 2 GPUs: "
        "run it on a machine with 3, or simulate it"
    )
    assert refused["allocs"] == 0


def test_a_collective_one_member_never_issues_is_refused_before_allocating(sim: dict) -> None:
    refused = sim["missing_rank"]
    assert refused["type"] == "GpuError" and "NCCL would hang" in refused["error"]
    assert refused["allocs"] == 0


def test_cancel_stops_every_device_and_releases_everything(sim: dict) -> None:
    cancelled = sim["cancel_mid_run"]
    assert cancelled["type"] == "ExecutionCancelled"
    assert cancelled["allocs"] > 0 and cancelled["live"] == [0, 0]


def test_a_wait_on_another_devices_event_waits_for_its_record_to_be_issued(sim: dict) -> None:
    ev = sim["cross_device_event"]
    # gpu0 busy 3 ms, then records; gpu1's wait must not be issued before that record.
    assert ev["issue_end"][2] >= ev["issue_end"][1] >= 3_000_000
    assert ev["link_names"] == []  # a declared communicator nobody uses moves no data


def test_the_links_calibration_measures_every_pair_and_collective(sim: dict) -> None:
    links = sim["links_calibration"]
    raw = links["raw"]
    assert sorted(raw["pairs"]) == ["gpu0->gpu1", "gpu1->gpu0"]
    assert sorted(raw["collectives"]) == ["all_gather", "all_reduce", "reduce_scatter"]
    assert raw["data_check_ok"] and raw["nccl"] == "simulated"
    fields = links["fields"]
    assert fields["gpus"] == 2 and fields["link_gbps"] > 0 and fields["nccl_bus_gbps"] > 0
    assert set(fields["issue_cost_us"]) == {"peer_copy", *raw["collectives"]}
    assert links["preset_gpus"] == 2


def test_an_error_on_one_device_stops_the_others_and_names_the_op(sim: dict) -> None:
    failed = sim["error_on_one_device"]
    # gpu0 was waiting for gpu1 in the all-reduce: it is released, and the cause is reported.
    assert failed["type"] == "GpuError"
    assert failed["error"].startswith("CUDA error at op 0 (peer copy): cuMemcpyPeerAsync")
    assert failed["live"] == [0, 0]


def test_device_memory_is_checked_per_device_before_allocating(sim: dict) -> None:
    refused = sim["device_memory"]
    # The peer copy's source buffer is gpu0's: 3 GiB where 1 GiB is free.
    assert (
        refused["error"] == "this pipeline needs 3.0 GiB of device memory on gpu0, 1.0 GiB is free"
    )
    assert refused["allocs"] == 0


def test_a_measured_collective_joins_its_ranks_like_a_simulated_one(sim: dict) -> None:
    """The all-reduce's two ranks (rows 4 and 5) carry the 'collective' edge the simulator
    records, so the critical path of a measurement crosses devices the same way."""
    assert sim["two_devices"]["collective_deps"] == [[4, 5]]
    assert sim["every_collective"]["collective_deps"] == [[0, 1], [2, 3], [4, 5], [6, 7]]
