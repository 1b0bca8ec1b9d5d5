"""Matching CUPTI records to a multi-device run's ops (no GPU needed)."""

from __future__ import annotations

from swimlanes.gpu.multi_probe import is_nccl, match_records

AR = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def rec(start: int, end: int, tag: str = "ActivityKind.CONCURRENT_KERNEL") -> tuple:
    return (0, 7, start, end, tag, 0)


def test_one_record_per_op_in_call_order() -> None:
    kinds = ["h2d", "all_reduce", "peer_copy"]
    records = [rec(0, 10, "MEMCPY"), rec(12, 40, AR), rec(41, 50, "MEMCPY2")]
    assert match_records(kinds, records) == [(0, 10, "MEMCPY"), (12, 40, AR), (41, 50, "MEMCPY2")]


def test_a_collective_takes_the_extra_nccl_kernels_after_its_own() -> None:
    kinds = ["all_reduce", "kernel"]
    records = [rec(0, 10, AR), rec(11, 30, AR), rec(31, 35, "my_kernel")]
    assert match_records(kinds, records) == [(0, 30, AR), (31, 35, "my_kernel")]


def test_a_single_rank_collective_is_the_copy_nccl_made() -> None:
    assert match_records(["broadcast"], [rec(5, 9, "MEMCPY")]) == [(5, 9, "MEMCPY")]


def test_records_that_do_not_fit_the_ops_give_none() -> None:
    assert match_records(["kernel", "kernel"], [rec(0, 1)]) is None
    assert match_records(["kernel"], [rec(0, 1), rec(2, 3)]) is None  # no collective to take it


def test_nccl_kernels_are_known_by_name() -> None:
    assert is_nccl(AR) and is_nccl("ncclKernel_AllGather_RING_LL_Sum_int8_t")
    assert not is_nccl("spin_kernel") and not is_nccl("ActivityKind.MEMCPY")
