"""The comparison table (numeric sort, flags, selection) and the insights panel (click selects)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from swimlanes.analysis.insight_context import Insight
from swimlanes.timeline.compare import compare_timelines
from swimlanes.timeline.timeline import Timeline, TimelineBuilder
from swimlanes.ui.comparison_table import COLUMNS, ComparisonTable
from swimlanes.ui.insights_panel import InsightsPanel

US = 1000


def _timeline(durations_us: list[int], source: str) -> Timeline:
    """Kernels one after another on s1 with these durations."""
    b = TimelineBuilder(["s1"], ["Compute"])
    t = 0
    for i, d in enumerate(durations_us):
        b.add(
            index=i,
            kind="kernel",
            stream="s1",
            engine="Compute",
            issue_start=i * US,
            issue_end=i * US + US,
            start=t + US,
            end=t + US + d * US,
            label=f"K{i}",
        )
        t += d * US
    return b.build(source=source, device="test")


def _column(name: str) -> int:
    """A column by its header without the unit ("Sim dur" for "Sim dur ({unit})")."""
    return [h.split(" (")[0].split(":")[0] for h, _, _ in COLUMNS].index(name)


def _shown(table: ComparisonTable, column: int) -> list[str]:
    m = table.model
    return [m.index(r, column).data() for r in range(m.rowCount())]


def test_simulated_only_table_sorts_numerically(qtbot) -> None:
    table = ComparisonTable()
    qtbot.addWidget(table)
    table.set_timeline(_timeline([5, 100, 20, 1000], "simulated"))
    dur = _column("Sim dur")
    table.view.sortByColumn(dur, Qt.SortOrder.AscendingOrder)
    # Numeric, not text order: "1,000.000" would sort before "100.000" and "20.000" as text.
    assert _shown(table, _column("Label")) == ["K0", "K2", "K1", "K3"]
    table.view.sortByColumn(dur, Qt.SortOrder.DescendingOrder)
    assert _shown(table, _column("Label")) == ["K3", "K1", "K2", "K0"]
    assert _shown(table, _column("Meas start")) == ["", "", "", ""]
    assert "4 ops simulated" in table.summary.text()


def test_flagged_rows_are_marked_tinted_and_filterable(qtbot) -> None:
    table = ComparisonTable()
    qtbot.addWidget(table)
    sim = _timeline([100, 100, 100], "simulated")
    meas = _timeline([100, 300, 100], "measured")  # K1 takes 3x the model's time
    comparison = compare_timelines(sim, meas)
    table.set_comparison(comparison)
    flag = _column("Flag")
    assert comparison.flagged_indexes[0] == 1
    model = table.model
    assert model.index(1, flag).data() == "⚑ duration -67%"  # what is off, and by how much
    assert model.index(1, 0).data(Qt.ItemDataRole.BackgroundRole) is not None
    assert model.index(0, 0).data(Qt.ItemDataRole.BackgroundRole) is None
    assert model.index(1, _column("Dur err")).data() == "-66.7%"
    table.flagged_only.setChecked(True)
    assert set(_shown(table, _column("Label"))) == set(
        comparison.labels[i] for i in range(len(comparison)) if comparison.flagged[i]
    )
    assert "flagged" in table.summary.text()


def test_table_selection_round_trips_program_indexes(qtbot) -> None:
    table = ComparisonTable()
    qtbot.addWidget(table)
    table.set_timeline(_timeline([5, 100, 20, 1000], "simulated"))
    table.view.sortByColumn(_column("Sim dur"), Qt.SortOrder.DescendingOrder)
    emitted: list[list[int]] = []
    table.selection_changed.connect(emitted.append)
    table.set_selection([1, 3])
    assert table.selected_indexes() == [1, 3]
    assert emitted == []  # programmatic selection does not echo back
    table.view.selectRow(0)  # K3 is on top after the descending sort
    assert emitted[-1] == [3]


def test_clicking_an_insight_selects_its_ops(qtbot) -> None:
    panel = InsightsPanel()
    qtbot.addWidget(panel)
    panel.set_insights(
        [
            Insight(
                "idle_engine_gap", "info", "Idle gap", "The copy engine idles.", "Reorder.", (4,)
            ),
            Insight(
                "pageable_copy",
                "problem",
                "Pageable copies",
                "Staged at 10 GB/s.",
                "Use pinned memory.",
                (0, 2),
                3_000_000,
            ),
        ]
    )
    assert panel.list.item(0).text().startswith("Pageable copies")  # most severe first
    html = panel.details.toHtml()
    assert "Staged at 10 GB/s" in html and "Use pinned memory" in html and "3 ms" in html
    with qtbot.waitSignal(panel.ops_selected) as sig:
        panel.select_insight(1)
    assert sig.args[0] == [4]
    rect = panel.list.visualItemRect(panel.list.item(0))
    with qtbot.waitSignal(panel.ops_selected) as sig:
        qtbot.mouseClick(panel.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert sig.args[0] == [0, 2]


def test_empty_insights_say_so(qtbot) -> None:
    panel = InsightsPanel()
    qtbot.addWidget(panel)
    panel.set_insights([])
    assert panel.list.count() == 0
    assert "nothing in this schedule looks wrong" in panel.details.toPlainText()
