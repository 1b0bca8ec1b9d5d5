"""Selecting many rows of a Qt item view at once.

A QItemSelection of one range per row makes selecting 10,000 rows slow twice over: building
it, and every later ``isSelected`` test while the view paints, which walks the ranges. Runs of
consecutive rows become one range each, so Select All is a single range.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import QItemSelection, QModelIndex


def row_runs(rows: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted, distinct ``rows`` as (first, last) runs of consecutive rows."""
    # plain Python: np.unique's first call imports numpy.ma (30 ms of start-up)
    runs: list[tuple[int, int]] = []
    for row in sorted({int(r) for r in rows}):
        if runs and runs[-1][1] == row - 1:
            runs[-1] = (runs[-1][0], row)
        else:
            runs.append((row, row))
    return runs


def rows_selection(
    rows: Iterable[int], index: Callable[[int, int], QModelIndex], last_column: int = 0
) -> QItemSelection:
    """A selection of whole ``rows`` (columns 0..``last_column``), one range per run;
    ``index(row, column)`` is the model's index."""
    selection = QItemSelection()
    for first, last in row_runs(rows):
        selection.select(index(first, 0), index(last, last_column))
    return selection
