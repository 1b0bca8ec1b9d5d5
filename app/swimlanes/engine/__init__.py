"""The engine: a discrete-event simulator of CUDA stream semantics, and device presets.

from swimlanes.engine import simulate, get_preset
timeline = simulate(pipeline, "h200")
"""

from swimlanes.engine.presets import (
    PRESET_FORMAT,
    PRESET_VERSION,
    DevicePreset,
    get_preset,
    load_preset,
    preset_names,
    preset_summary,
)
from swimlanes.engine.simulator import SimulationCancelled, simulate

__all__ = [
    "PRESET_FORMAT",
    "PRESET_VERSION",
    "DevicePreset",
    "SimulationCancelled",
    "get_preset",
    "load_preset",
    "preset_names",
    "preset_summary",
    "simulate",
]
