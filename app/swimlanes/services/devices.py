"""Which device preset to simulate on: for a pipeline file, and beside a measurement."""

from __future__ import annotations

from swimlanes.model.document import Pipeline
from swimlanes.timeline.timeline import Timeline

#: Used when neither ``--device`` nor the pipeline's ``device`` key names one.
FALLBACK_DEVICE = "h200"


def device_choice(pipeline: Pipeline, requested: str | None) -> str:
    """The preset to simulate on: ``--device``, else the pipeline's ``device`` key, else h200."""
    if requested:
        return requested
    preferred = pipeline.extra.get("device")
    return preferred if isinstance(preferred, str) and preferred.strip() else FALLBACK_DEVICE


def simulation_device(requested: str | None, measured: Timeline) -> str:
    """The preset to simulate on beside ``measured``, as ``compare`` chooses it: the one asked
    for, else the measured host's cached calibration, another host's of the same GPU, or the
    shipped preset of that GPU (h200 when there is none)."""
    # Imported here: the preset cache and calibration modules are only needed beside a
    # measurement, and plain simulations start faster without them.
    from swimlanes.gpu.preset_choice import choose_preset

    return choose_preset(measured, requested)[0].device
