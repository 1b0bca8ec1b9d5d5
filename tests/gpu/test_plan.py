"""Resource planning and the memory check (pure Python: no numba, no GPU)."""

from __future__ import annotations

import pytest

from swimlanes.gpu.errors import GpuError
from swimlanes.gpu.plan import (
    DEFAULT_MALLOC_BYTES,
    DeviceInfo,
    blocks_per_sm,
    check_memory,
    make_plan,
    plan_kernel,
)
from swimlanes.model.document import Op
from swimlanes.model.validate import pipeline_from_dict

H200 = DeviceInfo("H200", 132, 2048, 32, free_bytes=100 << 30, total_bytes=140 << 30)


def doc(program: list[dict], streams: list[dict] | None = None):
    return pipeline_from_dict(
        {"format": "swimlanes-pipeline", "version": 1, "streams": streams or [{"name": "s1"}],
         "program": program}
    )  # fmt: skip


def kernel(**kw) -> Op:
    return Op(op="kernel", stream="s1", **kw)


def test_residency_follows_thread_and_block_limits() -> None:
    assert blocks_per_sm(kernel(blocks=1, threads=256), H200) == 8
    assert blocks_per_sm(kernel(blocks=1, threads=32), H200) == 32
    assert blocks_per_sm(kernel(blocks=1, threads=1024), H200) == 2
    assert blocks_per_sm(kernel(blocks=1, threads=256, extra={"blocks_per_sm": 4}), H200) == 4
    assert blocks_per_sm(kernel(blocks=1, threads=32, extra={"blocks_per_sm": 99}), H200) == 32


def test_duration_kernels_spin_duration_over_waves_per_block() -> None:
    one_wave = plan_kernel(kernel(blocks=1056, threads=256, duration_us=1000), H200)
    assert (one_wave.variant, one_wave.block_ns) == ("spin", 1_000_000)
    three_waves = plan_kernel(kernel(blocks=1057 + 2 * 1056, threads=256, duration_us=3000), H200)
    assert three_waves.block_ns == 750_000  # 3169 blocks need 4 waves of 1056
    exact = plan_kernel(kernel(blocks=10, threads=64, block_us=2.5), H200)
    assert (exact.variant, exact.block_ns, exact.blocks, exact.threads) == ("spin", 2500, 10, 64)


def test_flops_and_bytes_kernels() -> None:
    fma = plan_kernel(kernel(blocks=100, threads=100, flops=32e6), H200)
    assert fma.variant == "fma" and fma.fma_iters == 100  # 32e6 / (2 * 16 FMAs * 10,000 threads)
    mem = plan_kernel(kernel(blocks=64, threads=256, bytes=8 << 20, flops=4 << 20), H200)
    assert mem.variant == "stream" and mem.elements == 1 << 20 and mem.fma_per_element == 2


def test_buffers_are_sized_by_the_largest_op_of_each_stream() -> None:
    p = doc(
        [
            {"op": "h2d", "stream": "s1", "bytes": 100},
            {"op": "h2d", "stream": "s1", "bytes": 300},
            {"op": "d2h", "stream": "s1", "bytes": 200, "host_memory": "pageable"},
            {"op": "d2d", "stream": "s2", "bytes": 50},
            {"op": "kernel", "stream": "s2", "blocks": 1, "threads": 32, "bytes": 800},
            {"op": "h2d", "bytes": 70, "async": False},
        ],
        [{"name": "s1"}, {"name": "s2"}],
    )
    plan = make_plan(p, H200)
    s1, s2, default = plan.buffers["s1"], plan.buffers["s2"], plan.buffers["default"]
    assert (s1.device, s1.device2, s1.pinned, s1.pageable) == (300, 0, 300, 200)
    assert (s2.device, s2.device2) == (400, 400)  # the kernel reads 400 bytes and writes 400
    assert (default.device, default.pinned) == (70, 70)
    assert plan.device_bytes == 300 + 800 + 70
    assert plan.pinned_bytes == 370 and plan.pageable_bytes == 200


def test_malloc_and_free_slots_pair_up() -> None:
    p = doc([{"op": "malloc", "bytes": 10}, {"op": "malloc"}, {"op": "free"}, {"op": "free"},
             {"op": "free"}])  # fmt: skip
    plan = make_plan(p, H200)
    assert [o.malloc_slot for o in plan.ops] == [0, 1, 1, 0, 2]
    assert plan.malloc_bytes == [10, DEFAULT_MALLOC_BYTES, DEFAULT_MALLOC_BYTES]


def test_memory_check_messages() -> None:
    p = doc([{"op": "h2d", "stream": "s1", "bytes": 12 << 30}])
    small = DeviceInfo("small", 132, 2048, 32, free_bytes=8 << 30, total_bytes=16 << 30)
    with pytest.raises(
        GpuError, match=r"^this pipeline needs 12\.0 GiB of device memory, 8\.0 GiB is free$"
    ):
        check_memory(make_plan(p, small), small, None)
    with pytest.raises(GpuError, match=r"needs 12\.0 GiB of pinned host memory, 3\.0 GiB is free"):
        check_memory(make_plan(p, H200), H200, 4 << 30)
    check_memory(make_plan(p, H200), H200, 64 << 30)  # fits: no error
