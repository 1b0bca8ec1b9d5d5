"""Timelines (the result of simulating or measuring a pipeline), their metrics and trace I/O.

No Qt here. Reading and writing timeline files (runs, Chrome and Kineto traces, CSV) lives in
the ``formats`` subpackage, imported on demand so that this package stays quick to import.
"""

from swimlanes.timeline.metrics import Metrics, compute_metrics
from swimlanes.timeline.timeline import NO_TIME, Timeline, TimelineBuilder

__all__ = ["NO_TIME", "Metrics", "Timeline", "TimelineBuilder", "compute_metrics"]
