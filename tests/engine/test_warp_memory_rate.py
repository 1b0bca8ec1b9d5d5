"""A ``flops``/``bytes`` kernel's memory traffic per SM grows less than in proportion to the
warps it keeps resident per SM (``warp_gbps_exponent``). Measured on the fidelity benchmark's
random pipelines (H100 and H200 hosts, 2026-11-25, training halves, kernels that ran alone): a
grid of one block of 512 threads moved 1.8 GB/s per warp where one warp moves 2.2 (``fid-0204``
op 27 ran 7.2-7.3 ms against 6.1-6.2 ms simulated with traffic in proportion to the warps)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_compiled_core import run_with

from swimlanes.engine import DevicePreset, get_preset, simulate
from swimlanes.engine.preset_model import FITTED_ROOFLINE
from swimlanes.engine.reference import simulate_reference
from swimlanes.model.document import Op, Pipeline, Stream

GPU = DevicePreset(
    name="w", sm_count=100, peak_tflops=10.0, memory_gbps=1000.0, warp_gflops=20.0,
    warp_gbps=2.0, kernel_overhead_us=0.0, warp_gbps_exponent=0.5,
)  # fmt: skip


def test_the_traffic_of_a_grid_grows_with_its_warps_to_the_exponent() -> None:
    # One warp moves warp_gbps whatever the exponent: 4000 bytes at 2 bytes/ns.
    assert GPU.roofline_ns(0, 4000, blocks=1, threads=32, per_sm=8) == 2000
    # 16 warps on one SM move 16 ** 0.5 = 4 warps' worth (8 bytes/ns), not 16 (32 bytes/ns).
    assert GPU.roofline_ns(0, 8000, blocks=1, threads=512, per_sm=4) == 1000
    assert replace(GPU, warp_gbps_exponent=1.0).roofline_ns(0, 8000, 1, 512, 4) == 250
    # The whole GPU's memory rate still caps a full grid; compute is not affected.
    assert GPU.roofline_ns(0, 4_000_000, blocks=100_000, threads=1024, per_sm=2) == 4000
    assert GPU.roofline_ns(1e6, 0, blocks=1, threads=512, per_sm=4) == 10_000  # SM share


def test_calibrated_presets_take_the_fitted_exponent() -> None:
    assert FITTED_ROOFLINE["warp_gbps_exponent"] == 0.9
    assert get_preset("h200").warp_gbps_exponent == 0.9  # calibrated on an H200
    for name in ("a100", "ideal"):  # built from published figures: traffic in proportion
        assert get_preset(name).warp_gbps_exponent == 1.0


@pytest.mark.parametrize("value", [0.0, 1.5, -1.0])
def test_a_bad_exponent_names_the_key(value: float) -> None:
    data = GPU.to_dict() | {"warp_gbps_exponent": value}
    with pytest.raises(ValueError, match="^warp_gbps_exponent: "):
        DevicePreset.from_dict(data)


SIMULATORS = {
    "python": lambda p: run_with("python", lambda: simulate(p, GPU)),
    "compiled": lambda p: run_with("compiled", lambda: simulate(p, GPU)),
    "reference": lambda p: simulate_reference(p, GPU),
}


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_every_simulator_times_the_kernel_at_its_warps_traffic(simulator: str) -> None:
    program = [Op("kernel", stream="s", blocks=1, threads=512, bytes=8_000_000)]
    pipeline = Pipeline(name="one block", streams=[Stream("s")], program=program)
    tl = SIMULATORS[simulator](pipeline)
    row = next(r for r in range(len(tl)) if int(tl.index[r]) == 0)
    # 8 MB at 16 ** 0.5 x 2 bytes/ns: 1 ms (4 times the 0.25 ms of 16 whole warps).
    assert int(tl.end[row]) - int(tl.start[row]) == 1_000_000
