"""A selection made outside the lanes (program panel, chart) always scrolls the lanes to it."""

from __future__ import annotations

from test_editor_helpers import Editor

from swimlanes.model import load_pipeline
from swimlanes.resources import example_path


def test_program_panel_selection_scrolls_lanes_even_after_a_repeated_click(qtbot) -> None:
    ed = Editor(load_pipeline(example_path("launch-bound")))  # 400+ ops: lanes must scroll
    qtbot.addWidget(ed)
    ed.resize(900, 500)
    ed.show()
    qtbot.waitExposed(ed)
    c, lanes = ed.controller, ed.lanes
    first = c.pipeline.program[0].uid
    block = lanes.block(first)
    c.set_selection([first])
    assert block.isSelected()
    # The scene reports a selection change whose blocks are what the controller already has
    # (as when a click lands on the selected block): the controller emits nothing.
    lanes.scene().selectionChanged.emit()
    last = c.pipeline.program[-2].uid
    c.set_selection([last])  # as the program panel does
    qtbot.waitUntil(
        lambda: (
            lanes.mapToScene(lanes.viewport().rect())
            .boundingRect()
            .intersects(lanes.block(last).sceneBoundingRect())
        )
    )
