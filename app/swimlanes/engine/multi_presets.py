"""The built-in multi-GPU presets: machines of H200s over NVLink or PCIe. Each GPU is the
``h200`` preset (the calibrated one where it is shipped); this module holds what the machine
adds, the link and NCCL figures, and says where each comes from (docs/simulating.md, "Several
devices", has the same table).
"""

from __future__ import annotations

from typing import Any

from swimlanes.model.document import COLLECTIVE_OPS

# Multi-GPU machines of H200s: each GPU is the h200 preset (the calibrated one where it is
# shipped). The 4x and 8x NVLink presets and the PCIe one take published figures (2x NVLink is
# measured, below; docs/simulating.md, "Several devices"):
# * NVLink 4 on H200 SXM: 18 links, 900 GB/s per GPU both directions together, 450 GB/s per
#   direction through NVSwitch (NVIDIA H200 datasheet).
# * One peer copy between a pair over NVSwitch: ~375 GB/s, the unidirectional P2P (copy
#   engine) figures p2pBandwidthLatencyTest printed on an HGX H100 (371-377 GB/s, quoted in
#   NVIDIA/nccl issue 1264); the H200 has the same NVLink 4 and NVSwitch, so the same rate is
#   assumed. Link latency 2.5 us: an assumption (that test's P2P latencies are a few us).
# * NCCL all-reduce bus bandwidth without NVLink SHARP (NVLS) on 8x H100/H200: ~360-400 GB/s
#   for large messages in published nccl-tests results; 360 is taken, for 2 and 4 GPUs too
#   (each GPU's ring traffic goes through its own NVLinks). Per-call latency 15 us and 24
#   channels (SMs) are assumptions: small all-reduces take ~10-20 us in nccl-tests, and NCCL
#   runs 16-32 channels on NVSwitch systems.
# * PCIe Gen5 x16: ~50 GB/s per direction peak; a peer copy is taken at the h200 preset's
#   measured pinned H2D rate (~55 GB/s, the same PCIe link), 5 us latency (assumed), and
#   NCCL's bus bandwidth over PCIe at 22 GB/s (published PCIe all-reduce results are 20-25),
#   20 us per call and 8 channels (assumed).
_NVLINK = {"link": "nvlink", "link_gbps": 375.0, "link_latency_us": 2.5,
           "nccl_bus_gbps": 360.0, "nccl_latency_us": 15.0, "nccl_channels": 24}  # fmt: skip
_PCIE = {"link": "pcie", "link_latency_us": 5.0, "nccl_bus_gbps": 22.0,
         "nccl_latency_us": 20.0, "nccl_channels": 8}  # fmt: skip
_NVLINK_TEXT = (
    "NVLink 4 through NVSwitch: 450 GB/s per direction per GPU (NVIDIA H200 datasheet: 18 "
    "links, 900 GB/s both ways); a peer copy between a pair at 375 GB/s (p2pBandwidthLatencyTest "
    "on an HGX H100, published; the H200's NVLink is the same); NCCL bus bandwidth 360 GB/s "
    "(published nccl-tests all-reduce results of 8x H100/H200 without NVLS: 360-400 GB/s). "
    "Assumed, not measured: 2.5 us link latency, 15 us per NCCL call, 24 NCCL channels (SMs)."
)
_PCIE_TEXT = (
    "PCIe Gen5 x16 between the GPUs (~50 GB/s per direction peak): a peer copy at the h200 "
    "preset's measured pinned H2D rate (~55 GB/s), NCCL bus bandwidth 22 GB/s (published "
    "PCIe all-reduce results: 20-25 GB/s). Assumed, not measured: 5 us link latency, 20 us "
    "per NCCL call, 8 NCCL channels (SMs)."
)
# Two H200s measured by `swimlanes calibrate --links` on 2026-11-24 (tests/gpu/multi/
# h200x2-links.json: 2 H200 SXM joined by NV18, driver 580.159.04, NCCL 2.28.9, NVLS off,
# CUPTI timing): a peer copy 396.2 GB/s per direction after 1.88 us; NCCL bus bandwidth
# 270.2 GB/s (all-reduce 302, reduce-scatter 241, all-gather 247 at 64 MB and up) and 5.0 us per
# call; 24 channels, from NCCL's own log; the host time of each call as `swimlanes run` makes
# it (CUPTI on). A broadcast was not measured: it costs what a kernel launch costs.
_NVLINK_2X = {"link": "nvlink", "link_gbps": 396.2, "link_latency_us": 1.88,
              "nccl_bus_gbps": 270.2, "nccl_latency_us": 5.0, "nccl_channels": 24}  # fmt: skip
_NVLINK_2X_CALLS = {"peer_copy": 6.4, "all_reduce": 27.2, "reduce_scatter": 18.0,
                    "all_gather": 24.5}  # fmt: skip
_NVLINK_2X_TEXT = (
    "2 NVIDIA H200 (each the h200 preset) joined by NVLink 4 (NV18), measured by swimlanes "
    "calibrate --links on 2026-11-24 (2 H200 SXM, driver 580.159.04, NCCL 2.28.9, NVLink "
    "multicast off): a peer copy 396.2 GB/s per direction after 1.88 us; NCCL bus bandwidth "
    "270.2 GB/s and 5.0 us per call; 24 NCCL channels (from NCCL's log); the host time of "
    "each peer-copy and NCCL call. Other hosts differ: calibrate yours."
)
#: name -> (GPUs, link figures, description): built from the h200 preset when asked for.
MULTI_GPU_PRESETS: dict[str, tuple[int, dict[str, Any], str]] = {
    f"{n}x-h200-nvlink": (n, _NVLINK, f"{n} NVIDIA H200 (each the h200 preset) joined by "
                          + _NVLINK_TEXT) for n in (4, 8)
}  # fmt: skip
MULTI_GPU_PRESETS = {"2x-h200-nvlink": (2, _NVLINK_2X, _NVLINK_2X_TEXT), **MULTI_GPU_PRESETS}
#: Measured host times of the multi-device calls (us), per preset; the others take what an H2D
#: copy call or a kernel launch costs on their GPU's preset.
_CALL_COSTS: dict[str, dict[str, float]] = {"2x-h200-nvlink": _NVLINK_2X_CALLS}
MULTI_GPU_PRESETS["2x-h200-pcie"] = (
    2,
    _PCIE,
    "2 NVIDIA H200 (each the h200 preset) joined only by " + _PCIE_TEXT,
)


def multi_gpu_changes(
    name: str, gpu_issue_costs: dict[str, float], gpu_h2d_gbps: float
) -> dict[str, Any]:
    """What preset ``name`` changes in its GPU's preset (whose API costs and pinned H2D rate
    are given): its name, description, GPU count, link and NCCL figures, and the API costs
    of the multi-device calls."""
    gpus, figures, description = MULTI_GPU_PRESETS[name]
    costs = {**gpu_issue_costs, **_CALL_COSTS.get(name, {})}
    # A peer copy call costs what an H2D copy call costs, a collective (NCCL enqueues a
    # kernel) what a kernel launch costs, unless the GPU's preset says otherwise.
    for kind, like in (("peer_copy", "h2d"), *((k, "kernel") for k in COLLECTIVE_OPS)):
        costs[kind] = costs.get(kind) or costs.get(like, 0.0)
    return {"link_gbps": gpu_h2d_gbps, **figures, "name": name, "description": description,
            "gpus": gpus, "issue_cost_us": costs}  # fmt: skip
