"""The executor's planning and issuing logic under numba's CUDA simulator (no GPU needed).

The scenarios run once, in a child process with NUMBA_ENABLE_CUDASIM=1 (numba reads it at
import), so this module never changes how other tests in this process see CUDA.
"""

from __future__ import annotations

import pytest
from sim_child import run_under_simulator


@pytest.fixture(scope="module")
def sim() -> dict:
    return run_under_simulator("sim_scenarios.py", timeout=120)


def test_ops_are_issued_in_program_order_with_their_real_calls(sim: dict) -> None:
    issued = sim["order"]["issued"]
    assert [c[0] for c in issued] == [
        "h2d", "kernel", "event_record", "event_wait", "d2h", "h2d", "d2d", "memset",
        "host_func", "malloc", "free", "stream_sync", "event_sync", "device_sync",
    ]  # fmt: skip
    assert issued[0] == ["h2d", "s1", 4096, "pinned", False]
    assert issued[4] == ["d2h", "s2", 2048, "pageable", False]
    # A sync memset with no stream goes to the legacy default stream.
    assert issued[7] == ["memset", "default", 512, True]
    # duration_us 30 over 264 blocks of 256 threads: 8 per SM, one wave, so 30 us per block.
    assert issued[1] == ["kernel", "s1", "spin", 264, 256, 30000]


def test_the_measured_timeline_has_one_row_per_op(sim: dict) -> None:
    order = sim["order"]
    assert order["rows"] == 15 and order["source"] == "measured"
    ops = order["ops"]
    assert [o["index"] for o in ops] == list(range(15))
    issue = [o["issue_us"] for o in ops]
    assert issue == sorted(issue) and issue[0] == 0.0
    assert all(o["issue_end_us"] >= o["issue_us"] for o in ops)
    # Host work busy-waits its duration on the host thread.
    host = next(o for o in ops if o["op"] == "host")
    assert host["issue_end_us"] - host["issue_us"] >= 10.0
    # The host function's callback ran for its 20 us.
    hf = next(o for o in ops if o["op"] == "host_func")
    assert hf["end_us"] - hf["start_us"] >= 20.0
    assert order["meta"]["backend"] == "none"


def test_buffers_are_pooled_per_stream_and_reused_across_repetitions(sim: dict) -> None:
    reuse = sim["reuse"]
    assert reuse["allocs_1"] == reuse["allocs_4"]  # more repetitions allocate nothing more
    device = sorted(c[2] for c in reuse["allocs_1"] if c[1] == "device")
    # s1: largest of H2D 4096 (device) and D2D 1024 (second buffer); s2: 8192; default: the
    # memset's 512; two 256-byte buffers for the warm-up launches.
    assert device == [256, 256, 512, 1024, 4096, 8192]
    host = sorted((c[1], c[2]) for c in reuse["allocs_1"] if c[1] != "device")
    assert host == [("pageable", 2048), ("pinned", 4096), ("pinned", 8192)]
    assert reuse["live_1"] == reuse["live_4"] == 0


def test_memory_check_refuses_before_allocating_and_gives_the_numbers(sim: dict) -> None:
    m = sim["memory"]
    assert m["device"] == "this pipeline needs 8.5 GiB of device memory, 3.0 GiB is free"
    assert m["device_allocs"] == 0
    assert m["host"] == "this pipeline needs 3.0 GiB of pinned host memory, 1.0 GiB is free"
    assert m["host_allocs"] == 0


def test_cancel_stops_between_ops_and_releases_everything(sim: dict) -> None:
    for case in sim["cancel"].values():
        assert case["cancelled"]
        assert case["live"] == 0
        assert case["message"].startswith("cancelled")
    early, late = sim["cancel"]["after_3"], sim["cancel"]["after_40"]
    # cancel() is asked before each repetition and each op; 14 of the 15 ops are CUDA calls
    # (host work is not), and the warm-up repetition counts.
    assert early["issued"] == 2 and early["message"] == "cancelled at op 2"
    assert late["issued"] == 14 + 14 + 7 and late["message"] == "cancelled at op 7"


def test_a_cuda_error_mid_run_gives_a_clear_message_and_leaves_nothing(sim: dict) -> None:
    err = sim["errors"]
    mid = err["mid_run"]
    assert mid["raised"] and mid["live"] == 0
    assert mid["message"].startswith("CUDA error at op 5 (H2D): cuMemcpyDtoHAsync failed")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in mid["message"]
    setup = err["setup"]
    assert setup["raised"] and setup["live"] == 0
    assert "CUDA_ERROR_OUT_OF_MEMORY" in setup["message"]
    assert err["after"] == {"rows": 15, "live": 0}


def test_progress_partial_results_and_spread(sim: dict) -> None:
    cb = sim["callbacks"]
    assert cb["fractions"] == [0.25, 0.5, 0.75, 1.0]
    assert cb["partial"] == [1, 2, 3]  # one partial timeline per timed repetition
    assert cb["spread"]
    assert cb["backend"] == "events"
    assert "fires when its stream reaches the op" in cb["note"]
