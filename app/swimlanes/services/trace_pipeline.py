"""A trace or measured run opened as an editable pipeline (``swimlanes import-trace`` and the
app's File > Open trace as pipeline), simulated unedited on the preset the measurement would be
compared on, to say how closely it replays."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swimlanes.engine import get_preset, simulate
from swimlanes.engine.presets import DevicePreset
from swimlanes.services.devices import simulation_device
from swimlanes.services.errors import CommandError
from swimlanes.services.runs import load_trace
from swimlanes.timeline.reconstruct import CopyContention, Reconstruction, reconstruct
from swimlanes.timeline.timeline import Timeline


@dataclass
class TracePipeline:
    """The rebuilt pipeline and its measurement, the preset it was rebuilt for, and the
    simulation of the unedited pipeline on it (to say how close the replay is)."""

    rebuilt: Reconstruction
    preset: DevicePreset
    simulated: Timeline

    @property
    def replay_error(self) -> float | None:
        """Simulated minus measured makespan, as a fraction of the measured one."""
        measured = self.rebuilt.measured.makespan_ns
        return (self.simulated.makespan_ns - measured) / measured if measured else None


def rebuild(
    timeline: Timeline, requested_device: str | None, name: str | None = None
) -> TracePipeline:
    """Rebuild ``timeline`` on ``requested_device`` (else the preset compare would choose for
    it) and simulate the unedited result there."""
    device = requested_device or simulation_device(None, timeline)
    try:
        preset = get_preset(device)
    except ValueError as err:
        raise CommandError(str(err)) from None
    rebuilt = reconstruct(timeline, name=name, contention=copy_contention(preset))
    rebuilt.pipeline.extra["device"] = requested_device or preset.name
    if not rebuilt.pipeline.program:
        raise CommandError("the trace holds no op that a pipeline can replay")
    try:
        simulated = simulate(rebuilt.pipeline, preset)
    except ValueError as err:
        raise CommandError(f"the rebuilt pipeline does not simulate: {err}") from None
    return TracePipeline(rebuilt, preset, simulated)


def copy_contention(preset: DevicePreset) -> CopyContention:
    """How ``preset`` slows copies of both directions that run at once."""
    d2h_slowdown = preset.bidirectional_slowdown_d2h
    d2h_overhead = preset.bidirectional_overhead_d2h_us
    return CopyContention(
        slowdown=(
            preset.bidirectional_slowdown,
            preset.bidirectional_slowdown if d2h_slowdown is None else d2h_slowdown,
        ),
        overhead_us=(
            preset.bidirectional_overhead_us,
            preset.bidirectional_overhead_us if d2h_overhead is None else d2h_overhead,
        ),
    )


def rebuild_file(path: str | Path, requested_device: str | None) -> TracePipeline:
    """:func:`rebuild` the timeline of a trace, run or timeline file."""
    timeline, _ = load_trace(Path(path))
    return rebuild(timeline, requested_device, name=f"{Path(path).name} (rebuilt)")
