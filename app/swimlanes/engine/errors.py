"""The engine's exceptions that more than one of its modules raises."""

from __future__ import annotations


class SimulationCancelled(Exception):
    """Raised by :func:`~swimlanes.engine.simulate` when its ``cancel`` callback returned
    True."""
