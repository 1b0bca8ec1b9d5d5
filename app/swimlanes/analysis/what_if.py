"""What-if analysis: re-simulate a changed copy of a pipeline to price a fix.

The insights ask the model what a change would save (pinned memory, async copies, another issue
order, a wider preset ...). These helpers pick the preset to ask and run the variant; a variant
the engine refuses, or a pipeline too large to re-simulate quickly, gives no estimate rather
than an error.
"""

from __future__ import annotations

from collections.abc import Callable

from swimlanes.engine import DevicePreset, get_preset, simulate
from swimlanes.model.document import Pipeline
from swimlanes.timeline.timeline import Timeline

#: Above this many ops, what-if estimates (one simulation each) are skipped to stay interactive.
WHAT_IF_MAX_OPS = 20_000


def what_if_preset(preset: DevicePreset | str | None, timeline: Timeline) -> DevicePreset | None:
    """The preset to simulate what-ifs with: the one given (a preset or its name), else the one
    that simulated ``timeline``; None when it is unknown or cannot be loaded (a measured
    timeline with no preset given has none)."""
    if isinstance(preset, DevicePreset):
        return preset
    name = preset
    if name is None and timeline.source == "simulated":
        name = timeline.meta.get("preset") or timeline.device or None
    if not isinstance(name, str):
        return None
    try:
        return get_preset(name)
    except (ValueError, OSError):
        return None


def what_if_makespan(
    pipeline: Pipeline,
    preset: DevicePreset,
    change: Callable[[Pipeline], None] | None = None,
) -> int | None:
    """The makespan the model predicts for ``pipeline`` with ``change`` applied to a copy of
    it, on ``preset``; None when the pipeline has more than :data:`WHAT_IF_MAX_OPS` ops or the
    engine refuses the variant."""
    if len(pipeline.program) > WHAT_IF_MAX_OPS:
        return None
    variant = pipeline.copy()
    if change is not None:
        change(variant)
    try:
        return int(simulate(variant, preset).makespan_ns)
    except (ValueError, RuntimeError):  # the engine cannot run the variant: no estimate
        return None
