"""Simulation results in the main window: the chart, table, summary and insights follow each
simulation, and say so when there is no current one (a failed or stopped simulation, another
document, an autosave that cannot be written). Mixed into MainWindow, which provides the widgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy comes with it: not before the window's first paint
    from swimlanes.timeline.timeline import Timeline

#: Above this many ops, insights are only worked out while their tab is shown.
INSIGHTS_EAGER_LIMIT = 5000


class SimulationResults:
    """The result views' side of MainWindow (see the module docstring)."""

    simulated: Timeline | None
    simulation_problem: str
    measured: Timeline | None
    comparison: Any
    charts: Any
    table: Any
    summary: Any
    insights: Any
    sim_runner: Any
    sim_progress: Any
    autosaver: Any
    autosave_warning: Any
    timing_label: Any
    bottom_tabs: Any
    controller: Any
    _insights_stale: bool
    _insights_timer: Any
    statusBar: Any  # noqa: N815 - QMainWindow's
    set_playing: Any
    device_name: Any
    band: Any

    def _on_simulated(self, timeline: Timeline) -> None:
        from swimlanes.ui.gantt.rows import format_duration

        self.simulated = timeline
        self.simulation_problem = ""
        # a result from the worker took long enough for the user to wait for it: show it whole
        self.charts.set_simulated(timeline, refit=self.sim_runner.last_from_worker)
        self.refresh_results()
        # The band comes later, from a worker: many perturbed simulations of this document.
        self.band.request(self.controller.pipeline, self.sim_runner.device, timeline)
        self.timing_label.setText(f"simulated in {1000 * self.sim_runner.last_seconds:.1f} ms")
        self.statusBar().showMessage(
            f"Simulated {len(timeline)} ops on {timeline.device or self.device_name()}: "
            f"makespan {format_duration(timeline.makespan_ns)}",
            8000,
        )

    def _on_simulation_busy(self, busy: bool) -> None:
        if busy:
            self.sim_progress.begin(self.document_name(), "Simulating")
        else:
            self.sim_progress.hide()

    def _on_simulation_failed(self, message: str) -> None:
        """Nothing may look current that is not: the schedule fades with the reason over it,
        the table, the summary and the insights drop the stale results."""
        first_line = message.splitlines()[0] if message else "unknown error"
        self.statusBar().showMessage(f"Simulation failed: {first_line}", 15000)
        self.simulated = None
        self.band.clear()
        self.timing_label.setText("")
        self.simulation_problem = f"Simulation failed: {message}"
        self.charts.set_simulation_problem(
            f"{self.simulation_problem}\nThe faded schedule is the last one that simulated; "
            "it does not show the document as it is now."
        )
        self.set_playing(False)
        self.insights.set_insights([])
        self.refresh_results()

    def _on_autosave_failed(self, message: str) -> None:
        self.autosave_warning.setText("Autosave failed")
        self.autosave_warning.setToolTip(
            f"The recovery copy of your unsaved work could not be written to "
            f"{self.autosaver.path}: {message}\nUntil it can, a crash would lose the edits "
            "since the last save. Swimlanes keeps trying; saving the document also protects it."
        )
        self.autosave_warning.show()
        self.statusBar().showMessage(f"Autosave failed: {message}", 15000)

    def _on_document_replaced(self) -> None:
        # New, Open, an example or a recovery: nothing of the previous document stays on screen.
        self.simulated = None
        self.band.clear()
        self.simulation_problem = ""
        self.set_playing(False)
        self.charts.reset_view()

    def refresh_results(self) -> None:
        """Recompute the comparison, the summary, the table and the insights."""
        from swimlanes.timeline.compare import compare_timelines
        from swimlanes.timeline.metrics import compute_metrics

        sim, meas = self.simulated, self.measured
        matches = sim is not None and meas is not None and _same_ops(sim, meas)
        self.comparison = compare_timelines(sim, meas) if matches else None
        if self.comparison is not None:
            self.table.set_comparison(self.comparison)
            self.charts.set_flags(self.comparison.flagged_indexes)
        else:
            note = self.simulation_problem
            if sim is not None and meas is not None:
                note = (
                    f"The measurement ({len(meas)} ops) does not match the pipeline "
                    f"({len(sim)} ops) op by op, so there is no per-op comparison."
                )
            self.table.set_timeline(sim, note)
            self.charts.set_flags([])
        if self.comparison is not None:  # it has computed both already
            metrics = (self.comparison.sim_metrics, self.comparison.meas_metrics)
        else:
            metrics = tuple(compute_metrics(t) if t is not None else None for t in (sim, meas))
        self.summary.set_metrics(*metrics, comparable=matches)
        self.band.set_measured(meas if matches else None)
        self._insights_stale = True
        self._insights_timer.start()  # after the chart is drawn, and once per burst of edits
        self._critical_path_stale = True
        self.refresh_critical_path()
        self._on_selection_changed()

    def refresh_critical_path(self) -> None:
        """The Critical path tab follows the simulation (else the measurement) while it is
        shown; hidden, it is brought up to date when it is opened."""
        if self.bottom_tabs.currentWidget() is not self.critical:
            return
        if getattr(self, "_critical_path_stale", True):
            self._critical_path_stale = False
            self.critical.set_timeline(
                self.simulated if self.simulated is not None else self.measured
            )

    def _refresh_insights(self) -> None:
        sim = self.simulated
        if not self._insights_stale or sim is None:
            return
        shown = self.bottom_tabs.currentWidget() is self.insights
        if not shown and (len(sim) > INSIGHTS_EAGER_LIMIT or self._insights_timer.isActive()):
            return  # the tab title's count is refreshed later or when the tab is opened
        from swimlanes.analysis.insights import explain

        pipeline = self.controller.pipeline
        try:
            found = (
                explain(
                    pipeline,
                    sim,
                    self.sim_runner.device,  # a name or a preset file: what simulated it
                    self.measured if self.comparison else None,
                )
                if len(sim) == len(pipeline.program)
                else []
            )
        except Exception as err:  # noqa: BLE001 - a failing rule must not break the window
            found = []
            self.statusBar().showMessage(f"Insights unavailable: {err}", 8000)
        self._insights_stale = False
        self.insights.set_insights(found)
        i = self.bottom_tabs.indexOf(self.insights)
        self.bottom_tabs.setTabText(i, f"Insights ({len(found)})" if found else "Insights")


def _same_ops(simulated: Timeline, measured: Timeline) -> bool:
    """Whether a measurement is of this pipeline: the same op kinds at the same program indexes.

    After an edit, or for a profiler trace of other code, matching rows by index would compare
    unrelated ops, so the table and the flags are left out then. A pipeline rebuilt from a
    trace has ops the trace has no row for (host ops for the program's own time), and the
    trace rows it could not replay carry indexes past the program: every row within the
    program must then be the op at its index.
    """
    import numpy as np

    if len(simulated) == len(measured):
        return np.array_equal(simulated.index, measured.index) and np.array_equal(
            simulated.kind, measured.kind
        )
    if not bool(measured.meta.get("calls")):  # only a rebuilt trace may leave ops unmeasured
        return False
    inside = measured.index < len(simulated)
    at = measured.index[inside]
    return (
        bool(inside.any())
        and len(np.unique(at)) == len(at)
        and np.array_equal(simulated.index, np.arange(len(simulated)))
        and np.array_equal(simulated.kind[at], measured.kind[inside])
    )
