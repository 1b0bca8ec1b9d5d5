"""Which preset to simulate on beside a measurement: the calibration of the host it came from.

In order: the preset asked for (``--device``); the cached calibration the run recorded, or any
cached calibration of the run's host (same GPU, driver, CPU and host name); else a fallback
with a warning, because another host's figures mispredict this one: a cached calibration of
the same GPU model on another host, else the shipped preset of that GPU (``h200`` for an H200),
else ``h200``. Qt-free; the app and ``swimlanes compare`` both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swimlanes.gpu.host import HostIdentity
from swimlanes.gpu.preset_cache import CachedPreset, find_for_gpu, find_for_host, list_cached
from swimlanes.timeline.timeline import Timeline

#: Where and when the shipped presets were calibrated, as far as it is known.
SHIPPED_ORIGINS = {
    "h200": "calibrated 2026-11-24 on one H200 host (driver 580.159.04, CUDA 13.0, Intel Xeon)",
}
BUILT_IN_ORIGIN = "built-in figures, not calibrated on any host"
#: The host each shipped preset was calibrated on (its example runs were measured there too):
#: beside a measurement of that host the shipped preset is that host's calibration.
SHIPPED_HOSTS = {
    "h200": HostIdentity(
        "NVIDIA H200", "580.159.04, CUDA 13.0", "Intel(R) Xeon(R) Processor", "vm"
    ),
}


@dataclass(frozen=True)
class PresetChoice:
    """The preset to simulate on, and how far to trust it for this measurement.

    ``device`` is a preset name or a preset file path (what ``get_preset`` takes); ``source``
    is ``requested``, ``measured-host``, ``other-host`` or ``shipped``; ``origin`` says where
    and when the preset was calibrated; ``warning`` is set when it is not a calibration of the
    measurement's host. ``same_gpu`` is False when no preset of the measured GPU exists at all
    (``h200`` then stands in).
    """

    device: str
    source: str
    origin: str
    warning: str | None = None
    entry: CachedPreset | None = None
    same_gpu: bool = True

    def to_json(self) -> dict[str, Any]:
        """The ``preset`` object of ``swimlanes compare --json``."""
        return {
            "device": self.device,
            "source": self.source,
            "origin": self.origin,
            "warning": self.warning,
            "cached": self.entry.to_json() if self.entry is not None else None,
            "same_gpu": self.same_gpu,
        }


def choose_preset(
    measured: Timeline, requested: str | None = None
) -> tuple[PresetChoice, list[str]]:
    """The preset for ``measured`` and the messages of cache entries that were skipped."""
    if requested:
        return PresetChoice(requested, "requested", f"{requested}, as asked"), []
    entries, problems = list_cached()
    meta = measured.meta if isinstance(measured.meta, dict) else {}
    host = HostIdentity.from_dict(meta.get("host"))
    own = _recorded_entry(meta, entries, host)
    if own is None and host is not None:
        own = find_for_host(host, entries)
    if own is not None:
        return PresetChoice(str(own.path), "measured-host", own.describe(), None, own), problems
    return _fallback(measured.device or (host.gpu if host else ""), host, entries), problems


def _recorded_entry(
    meta: dict[str, Any], entries: list[CachedPreset], host: HostIdentity | None
) -> CachedPreset | None:
    """The cached preset the run says it was calibrated against, if this cache holds it (the
    id hashes the host identity, so an id found here is that host's)."""
    ref = meta.get("calibration")
    if not isinstance(ref, dict) or not isinstance(ref.get("id"), str):
        return None
    found = next((e for e in entries if e.id == ref["id"]), None)
    if found is not None and host is not None and found.host != host:
        return None
    return found


def _fallback(gpu: str, host: HostIdentity | None, entries: list[CachedPreset]) -> PresetChoice:
    from swimlanes.engine import preset_names
    from swimlanes.gpu.calibrate import preset_name

    unknown = (
        f"no calibration of the measured {host.describe()} here"
        if host is not None
        else "the measurement does not record its host"
    )
    shipped = preset_name(gpu) if gpu else ""
    if host is not None and shipped in SHIPPED_HOSTS and host == SHIPPED_HOSTS[shipped]:
        origin = SHIPPED_ORIGINS.get(shipped, BUILT_IN_ORIGIN)
        return PresetChoice(shipped, "shipped", f"shipped preset, {origin}: the measured host")
    other = find_for_gpu(gpu, entries) if gpu else None
    if other is not None:
        warning = (
            f"{unknown}; simulating on a preset of another host "
            f"({other.describe()}): host costs and copy rates differ between hosts"
        )
        return PresetChoice(str(other.path), "other-host", other.describe(), warning, other)
    guess = preset_name(gpu) if gpu else ""
    name = guess if guess in preset_names() else "h200"
    origin = SHIPPED_ORIGINS.get(name, BUILT_IN_ORIGIN)
    instead = "" if name == guess else f"; there is no preset of {gpu or 'this GPU'}"
    warning = (
        f"{unknown}; simulating on the shipped {name} preset "
        f"({origin}{instead}): `swimlanes calibrate` on that host gives a closer model"
    )
    origin = f"shipped preset, {origin}"
    return PresetChoice(name, "shipped", origin, warning, same_gpu=name == guess)
