"""The inspector's measured host times of a captured program's op: Call time (``call_us``, any
op) and Copy-out time (``copy_out_us``, a pageable D2H), shown, set, cleared, undone, refused
when unusable, and used by the next simulation."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from test_editor_helpers import MIB, Editor
from test_main_window import make_window

from swimlanes.model.validate import pipeline_from_dict
from swimlanes.ui.editor.code_lines import program_lines


def _captured():
    """Ops as a rebuilt capture holds them: each call with its measured time."""
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": "captured",
            "program": [
                {"op": "kernel", "label": "K0", "blocks": 132, "threads": 256,
                 "duration_us": 50, "call_us": 6.25},
                {"op": "h2d", "bytes": 4 * MIB, "host_memory": "pageable", "label": "in",
                 "duration_us": 382.5, "call_us": 487.5},
                {"op": "d2h", "bytes": 4 * MIB, "host_memory": "pageable", "label": "out",
                 "duration_us": 363.582, "call_us": 5.5, "copy_out_us": 91.125},
                {"op": "d2h", "bytes": 4 * MIB, "label": "pinned out"},
                {"op": "device_sync"},
            ],
        }
    )  # fmt: skip


@pytest.fixture
def editor(qtbot) -> Editor:
    ed = Editor(_captured())
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    return ed


def _type(widget, text: str) -> None:
    widget.selectAll()
    if text:
        QTest.keyClicks(widget, text)
    else:
        QTest.keyClick(widget, Qt.Key.Key_Delete)
    QTest.keyClick(widget, Qt.Key.Key_Return)


def _shown(editor: Editor) -> set[str]:
    insp = editor.inspector
    return {k for k, f in insp.fields.items() if insp.op_form.isRowVisible(f)}


def test_a_captured_ops_measured_times_are_shown(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    call, copy_out = insp.host_times["call_us"], insp.host_times["copy_out_us"]
    c.set_selection_indexes([2])
    assert (call.text(), copy_out.text()) == ("5.5", "91.125")
    assert insp.op_form.labelForField(insp.fields["call_us"]).text() == "Call time (us)"
    assert insp.op_form.labelForField(insp.fields["copy_out_us"]).text() == "Copy-out time (us)"
    assert "measured in the captured program" in call.toolTip()
    c.set_selection_indexes([4])  # no measured call: the preset's cost
    assert call.text() == ""
    assert "preset's cost" in call.placeholderText()


def test_typing_a_call_time_sets_it_in_one_undo_step(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([4])  # a device sync, no call_us
    _type(insp.host_times["call_us"], "12.3")
    assert c.pipeline.program[4].call_us == 12.3
    assert c.pipeline.program[4].to_dict()["call_us"] == 12.3
    assert c.undo_stack.count() == 1
    assert c.undo_stack.undoText() == "Set device sync call time"
    c.undo_stack.undo()
    assert c.pipeline.program[4].call_us is None
    assert insp.host_times["call_us"].text() == ""
    c.undo_stack.redo()
    assert c.pipeline.program[4].call_us == 12.3
    assert insp.host_times["call_us"].text() == "12.3"


def test_clearing_a_measured_time_removes_the_key(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    before = c.pipeline.to_dict()
    c.set_selection_indexes([2])
    _type(insp.host_times["call_us"], "")
    _type(insp.host_times["copy_out_us"], "")
    saved = c.pipeline.program[2].to_dict()
    assert "call_us" not in saved and "copy_out_us" not in saved
    assert saved["duration_us"] == 363.582  # the copy's own time stays
    assert c.undo_stack.count() == 2
    c.undo_stack.undo()
    c.undo_stack.undo()
    assert c.pipeline.to_dict() == before


def test_every_digit_of_a_measured_time_survives_enter(editor: Editor) -> None:
    """Enter in a field shows nothing new: it must not round a capture's value."""
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([1])
    _type(insp.host_times["call_us"], "12345.678")
    c.set_selection_indexes([0])
    c.set_selection_indexes([1])
    assert insp.host_times["call_us"].text() == "12345.678"
    QTest.keyClick(insp.host_times["call_us"], Qt.Key.Key_Return)
    assert c.pipeline.program[1].call_us == 12345.678


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc", "'abc' is not a number"),
        ("-1", "must be at least 0"),
        ("2e9", "must be at most 1e+09 us (1,000 s)"),
        ("inf", "must be a finite number"),
    ],
)
@pytest.mark.parametrize("key", ["call_us", "copy_out_us"])
def test_unusable_times_are_refused_with_a_reason(
    editor: Editor, key: str, text: str, message: str
) -> None:
    c, insp = editor.controller, editor.inspector
    before = c.pipeline.to_dict()
    c.set_selection_indexes([2])
    _type(insp.host_times[key], text)
    assert insp.fields[key].error_text() == message
    assert c.pipeline.to_dict() == before and c.undo_stack.count() == 0


def test_a_zero_time_is_accepted_as_the_file_format_allows(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([2])
    _type(insp.host_times["copy_out_us"], "0")
    assert insp.fields["copy_out_us"].error_text() == ""
    assert c.pipeline.program[2].copy_out_us == 0.0


def test_copy_out_shows_for_a_pageable_d2h_only(editor: Editor) -> None:
    c = editor.controller
    for index, copy_out in [(0, False), (1, False), (2, True), (3, False), (4, False)]:
        c.set_selection_indexes([index])
        shown = _shown(editor)
        assert "call_us" in shown, index  # every op is a host call
        assert ("copy_out_us" in shown) is copy_out, index


def test_a_staging_calls_tooltip_says_it_covers_the_staging(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([1])  # async pageable H2D
    assert "includes the staging" in insp.host_times["call_us"].toolTip()
    c.set_selection_indexes([0])
    assert "staging" not in insp.host_times["call_us"].toolTip()


def test_pinning_a_pageable_d2h_hides_and_drops_its_copy_out(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    before = c.pipeline.to_dict()
    c.set_selection_indexes([2])
    combo = insp.host_memory
    combo.setCurrentText("pinned")
    combo.activated.emit(combo.currentIndex())
    op = c.pipeline.program[2]
    assert (op.host_memory, op.copy_out_us, op.call_us) == ("pinned", None, 5.5)
    assert "copy_out_us" not in _shown(editor)
    assert insp.host_times["call_us"].text() == "5.5"
    assert c.undo_stack.count() == 1
    assert c.undo_stack.undoText() == "Set out host memory, duration, copy-out time"
    c.undo_stack.undo()
    assert c.pipeline.to_dict() == before
    assert "copy_out_us" in _shown(editor)
    assert insp.host_times["copy_out_us"].text() == "91.125"


def test_a_measured_call_is_noted_in_its_program_line(editor: Editor) -> None:
    lines = program_lines(editor.controller.pipeline)
    assert lines[0].endswith("// 50 us, call 6.25 us (measured)"), lines[0]
    assert lines[2].endswith("91.12 us copying out, call 5.5 us (measured)"), lines[2]
    assert lines[4] == "cudaDeviceSynchronize()"  # no measured call: nothing to note
    editor.controller.set_selection_indexes([4])
    _type(editor.inspector.host_times["call_us"], "3")
    assert program_lines(editor.controller.pipeline)[4] == (
        "cudaDeviceSynchronize()  // call 3 us (measured)"
    )


def test_the_simulation_uses_the_typed_call_time(qtbot, tmp_path) -> None:
    """A kernel's call takes the typed time on the h200 preset, not the preset's cost."""
    win = make_window(qtbot, tmp_path)
    kernels = [
        {"op": "kernel", "label": f"K{i}", "blocks": 132, "threads": 256, "duration_us": 50}
        for i in range(3)
    ]
    doc = {"format": "swimlanes-pipeline", "version": 1, "name": "calls", "program": kernels}
    win.controller.set_pipeline(pipeline_from_dict(doc))
    assert win.set_device("h200")
    qtbot.waitUntil(lambda: win.simulated is not None and len(win.simulated) == 3)
    win.controller.set_selection_indexes([1])
    with qtbot.waitSignal(win.sim_runner.simulated, timeout=5000) as sig:
        _type(win.inspector.host_times["call_us"], "12.5")
    timeline = sig.args[0]
    assert int(timeline.issue_end[1] - timeline.issue_start[1]) == 12_500
    before = int(timeline.issue_end[2] - timeline.issue_start[2])
    assert before != 12_500  # the next kernel still costs the preset's


def test_a_captured_kernels_long_name_does_not_widen_the_inspector(qtbot) -> None:
    """A captured kernel keeps its mangled name, 120 characters without a space: the heading
    elides it (whole in its tooltip) instead of widening the form past the dock."""
    name = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma_" * 2
    doc = {"format": "swimlanes-pipeline", "version": 1, "name": "long",
           "program": [{"op": "kernel", "label": name, "blocks": 1, "threads": 32,
                        "duration_us": 5, "call_us": 4.5}]}  # fmt: skip
    ed = Editor(pipeline_from_dict(doc))
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    insp = ed.inspector
    ed.controller.set_selection_indexes([0])
    full = f"#0 {name}"
    assert insp.title.full_text() == full
    wide = insp.title.fontMetrics().horizontalAdvance(name)
    assert insp.minimumSizeHint().width() < wide / 2
    qtbot.waitUntil(lambda: insp.title.text() != full)  # elided to the heading's width
    assert insp.title.text().endswith("…") and insp.title.toolTip() == full


def test_empty_time_fields_show_the_simulations_preset_figures(qtbot, tmp_path) -> None:
    """An empty call time, copy-out or duration override says what it stands for on the
    device the simulation uses, and follows a change of device (before, the placeholders
    said "the device preset's" without a figure)."""
    from swimlanes.engine import get_preset

    win = make_window(qtbot, tmp_path)
    doc = {"format": "swimlanes-pipeline", "version": 1, "name": "figures",
           "program": [{"op": "d2h", "bytes": 4 * MIB, "host_memory": "pageable",
                        "label": "out"}]}  # fmt: skip
    win.controller.set_pipeline(pipeline_from_dict(doc))
    assert win.set_device("h200")
    win.controller.set_selection_indexes([0])
    insp = win.inspector
    h200 = get_preset("h200")
    call = h200.issue_cost_us["d2h"]
    assert insp.host_times["call_us"].placeholderText() == f"empty: {call:.4g} us on h200"
    copy = h200.copy_ns("d2h", 4 * MIB, "pageable") / 1000.0
    assert insp.time.placeholderText() == f"empty: {copy:.4g} us on h200"
    copy_out = insp.host_times["copy_out_us"].placeholderText()
    assert copy_out.startswith("empty: ") and copy_out.endswith(" us on h200")
    assert win.set_device("a100")
    a100 = get_preset("a100").copy_ns("d2h", 4 * MIB, "pageable") / 1000.0
    assert a100 != copy
    assert insp.time.placeholderText() == f"empty: {a100:.4g} us on a100"
    # A measured time is shown as itself; the placeholder keeps the preset's figure.
    win.controller.set_selection_indexes([0])
    _type(insp.time, "250")
    assert insp.time.text() == "250"
    assert insp.time.placeholderText() == f"empty: {a100:.4g} us on a100"
