"""Which machine a calibration or a measurement belongs to: GPU, driver, CPU and host name.

GPU hosts differ even with the same GPU (the host cost of a kernel launch, pageable copy
rates), so a preset is only trusted for the host it was calibrated on. Qt-free, and numba is
never imported here: the GPU name and driver come from a backend the caller already holds.
"""

from __future__ import annotations

import contextlib
import platform
import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

UNKNOWN = "unknown"
#: The longest field kept (a garbled /proc file must not make a huge cache entry).
_MAX_FIELD = 200


@dataclass(frozen=True)
class HostIdentity:
    """A GPU on one host: what a calibration is valid for. Equal identities match."""

    gpu: str
    driver: str
    cpu: str
    hostname: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> HostIdentity | None:
        """The identity recorded in a run or a cache entry; None if absent or garbled."""
        if not isinstance(data, dict):
            return None
        values = [data.get(key) for key in ("gpu", "driver", "cpu", "hostname")]
        strings = [v for v in values if isinstance(v, str)]
        if len(strings) != len(values):
            return None
        return cls(*(v[:_MAX_FIELD] for v in strings))

    def describe(self) -> str:
        """``host gpu-7 (AMD EPYC 9654, driver 580.95.05)``, for messages."""
        return f"host {self.hostname} ({self.cpu}, driver {self.driver})"


def this_host(backend: Any) -> HostIdentity:  # noqa: ANN401 - any CudaBackend
    """The identity of the GPU ``backend`` drives, on this machine."""
    return HostIdentity(
        gpu=_clip(backend.device_info().name),
        driver=_clip(driver_version(backend)),
        cpu=_clip(cpu_model()),
        hostname=_clip(socket.gethostname() or UNKNOWN),
    )


def driver_version(backend: Any) -> str:  # noqa: ANN401 - any CudaBackend
    """The backend's own answer (``driver_version()``), else ``unknown``."""
    ask = getattr(backend, "driver_version", None)
    if ask is None:
        return UNKNOWN
    try:
        return str(ask()) or UNKNOWN
    except Exception:  # noqa: BLE001 - a driver that cannot say is "unknown", not a failure
        return UNKNOWN


def nvidia_kernel_module_version() -> str | None:
    """The NVIDIA driver version from ``/proc/driver/nvidia/version`` (Linux), if readable."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = Path("/proc/driver/nvidia/version").read_text(encoding="utf-8")
        for word in text.split():
            parts = word.split(".")
            if len(parts) >= 2 and all(p.isdigit() for p in parts):
                return word
    return None


def cpu_model() -> str:
    """The CPU's model name: /proc/cpuinfo on Linux, else what the platform module says."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return " ".join(value.split())
    return platform.processor() or platform.machine() or UNKNOWN


def _clip(text: str) -> str:
    return " ".join(str(text).split())[:_MAX_FIELD] or UNKNOWN
