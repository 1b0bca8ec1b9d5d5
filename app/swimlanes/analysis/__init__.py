"""Analysis of a schedule: insights that explain a timeline, priced by what-if simulations.

Sits above ``engine`` and ``timeline`` (it re-simulates changed pipelines), so neither of them
depends on it. No Qt here.

from swimlanes.analysis import explain
insights = explain(pipeline, timeline)
"""

from swimlanes.analysis.insight_context import Insight
from swimlanes.analysis.insights import RULES, explain

__all__ = ["RULES", "Insight", "explain"]
