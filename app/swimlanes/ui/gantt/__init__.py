"""Gantt charts of timelines: one chart, simulated-vs-measured side by side, summary strip."""

from swimlanes.ui.gantt.bars import GanttBarsItem
from swimlanes.ui.gantt.chart import GanttChart
from swimlanes.ui.gantt.rows import COMPUTE_ROW, HOST_ROW, engine_row, stream_info_of, stream_row
from swimlanes.ui.gantt.side_by_side import ComparisonCharts
from swimlanes.ui.gantt.summary import SummaryStrip

__all__ = [
    "COMPUTE_ROW",
    "HOST_ROW",
    "ComparisonCharts",
    "GanttBarsItem",
    "GanttChart",
    "SummaryStrip",
    "engine_row",
    "stream_info_of",
    "stream_row",
]
