"""The code view and File > Export code: the generated program beside the lanes, kept in step
with edits (debounced, only while shown), following the selection, copied and saved."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QColor, QGuiApplication, QPalette

from swimlanes.codegen import generate_cuda, generate_python
from swimlanes.model.document import Op
from swimlanes.model.edits import InsertOps, RemoveOps, SetOpFields
from swimlanes.model.generators import random_pipeline
from swimlanes.ui import code_view as cv
from swimlanes.ui import dialogs
from swimlanes.ui.app import create_application
from swimlanes.ui.code_view import CodeView
from swimlanes.ui.document_controller import DocumentController
from swimlanes.ui.main_window import MainWindow
from swimlanes.ui.settings import Settings


@pytest.fixture
def controller(qtbot) -> DocumentController:
    create_application()
    return DocumentController(random_pipeline(300, seed=3))


def _view(qtbot, controller: DocumentController) -> CodeView:
    view = CodeView(controller)
    qtbot.addWidget(view)
    view.resize(700, 400)
    view.show()
    qtbot.waitExposed(view)
    return view


def _count_generations(monkeypatch) -> list[str]:
    """Record each generation the view runs, by language."""
    calls: list[str] = []
    wrapped = {
        key: (lambda p, _k=key, _f=fn: calls.append(_k) or _f(p))
        for key, fn in cv.LANGUAGES.items()
    }
    monkeypatch.setattr(cv, "LANGUAGES", wrapped)
    return calls


def _append_kernel(controller: DocumentController, label: str) -> None:
    op = Op("kernel", stream="s1", label=label, blocks=8, threads=64, duration_us=5.0)
    assert controller.push(InsertOps(len(controller.pipeline.program), [op]))


def test_shows_the_generated_program_in_both_languages(qtbot, controller) -> None:
    view = _view(qtbot, controller)
    assert view.text.isReadOnly()
    metrics = view.text.fontMetrics()  # monospace: columns line up
    assert metrics.horizontalAdvance("i") == metrics.horizontalAdvance("W")
    assert view.code() == generate_python(controller.pipeline)
    ast.parse(view.code())  # the shown text is a whole, valid script
    view.set_language("cuda")
    assert view.code() == generate_cuda(controller.pipeline)
    assert "300 ops" in view.info.text()


def test_each_op_line_is_found_for_every_op(qtbot, controller) -> None:
    view = _view(qtbot, controller)
    lines = view.code().split("\n")
    for i in (0, 17, 299):
        assert lines[view.op_line(i)].strip().startswith(f"# [{i}] ")
    assert view.op_line(300) is None
    view.set_language("cuda")
    lines = view.code().split("\n")
    assert lines[view.op_line(299)].strip().startswith("// [299] ")


def test_edits_regenerate_once_per_burst_after_a_pause(qtbot, controller, monkeypatch) -> None:
    view = _view(qtbot, controller)
    calls = _count_generations(monkeypatch)
    for n in range(5):
        _append_kernel(controller, f"burst {n}")
    assert calls == []  # editing does not wait for the code
    assert "burst 4" not in view.code()
    qtbot.waitUntil(lambda: "burst 4" in view.code(), timeout=3000)
    assert calls == ["python"]
    assert view.code() == generate_python(controller.pipeline)
    # only the changed lines are replaced: removals and changes in the middle come out right
    uids = [op.uid for op in controller.pipeline.program[100:103]]
    assert controller.push(RemoveOps(uids))
    assert controller.push(SetOpFields(controller.pipeline.program[5].uid, {"label": "mid"}))
    view.regenerate()
    assert view.code() == generate_python(controller.pipeline)
    assert view.text.document().blockCount() == len(view.code().split("\n"))


def test_a_hidden_view_does_no_work_and_catches_up_when_shown(
    qtbot, controller, monkeypatch
) -> None:
    view = _view(qtbot, controller)
    view.hide()
    calls = _count_generations(monkeypatch)
    _append_kernel(controller, "while hidden")
    qtbot.wait(cv.REGENERATE_DELAY_MS + 150)
    assert calls == [] and "while hidden" not in view.code()
    view.show()
    assert calls == ["python"] and "while hidden" in view.code()


def test_selecting_an_op_scrolls_to_its_code_and_marks_it(qtbot, controller) -> None:
    view = _view(qtbot, controller)
    bar = view.text.verticalScrollBar()
    assert bar.value() == 0
    controller.set_selection_indexes([250])
    line = view.op_line(250)
    first_shown = view.text.firstVisibleBlock().blockNumber()
    shown = view.text.viewport().height() // view.text.fontMetrics().lineSpacing()
    assert first_shown <= line < first_shown + shown
    assert line - first_shown == cv.CONTEXT_LINES
    marks = view.text.extraSelections()
    assert len(marks) == 1
    doc = view.text.document()
    assert doc.findBlock(marks[0].cursor.selectionStart()).blockNumber() == line
    assert doc.findBlock(marks[0].cursor.selectionEnd()).blockNumber() == view.op_line(251) - 1
    # an op already in view does not make the code jump
    controller.set_selection_indexes([251])
    assert view.text.firstVisibleBlock().blockNumber() == first_shown


@pytest.mark.parametrize("language", ["python", "cuda"])
def test_the_last_ops_marked_lines_end_before_the_programs_closing_lines(
    qtbot, controller, language
) -> None:
    view = _view(qtbot, controller)
    view.set_language(language)
    controller.set_selection_indexes([299])
    marks = view.text.extraSelections()
    last = view.text.document().findBlock(marks[0].cursor.selectionEnd()).blockNumber()
    lines = view.code().split("\n")
    assert last >= view.op_line(299)
    assert "ynchronize" in lines[last + 1] and "allocations" in lines[last + 2]


def test_clicking_in_an_ops_code_selects_the_op(qtbot, controller) -> None:
    view = _view(qtbot, controller)
    cursor = view.text.textCursor()
    cursor.setPosition(view.text.document().findBlockByNumber(view.op_line(40) + 1).position())
    view.text.setTextCursor(cursor)
    assert controller.selected_indexes() == [40]
    cursor.setPosition(0)  # the prelude belongs to no op: the selection stays
    view.text.setTextCursor(cursor)
    assert controller.selected_indexes() == [40]


def test_regenerating_keeps_the_scroll_position(qtbot, controller) -> None:
    view = _view(qtbot, controller)
    controller.set_selection_indexes([200])
    top = view.text.verticalScrollBar().value()
    assert top > 0
    uid = controller.pipeline.program[250].uid
    assert controller.push(SetOpFields(uid, {"label": "renamed"}))
    qtbot.waitUntil(lambda: "renamed" in view.code(), timeout=3000)
    assert view.text.verticalScrollBar().value() == top


def test_copy_puts_the_whole_program_on_the_clipboard(qtbot, controller) -> None:
    view = _view(qtbot, controller)
    view.set_language("cuda")
    with qtbot.waitSignal(view.message) as blocker:
        view.copy_button.click()
    assert QGuiApplication.clipboard().text() == generate_cuda(controller.pipeline)
    assert "CUDA C++" in blocker.args[0]


def _token_colour(view: CodeView, line: int, column: int) -> QColor:
    block = view.text.document().findBlockByNumber(line)
    for fmt in block.layout().formats():
        if fmt.start <= column < fmt.start + fmt.length:
            return fmt.format.foreground().color()
    return QColor()


def test_highlighting_marks_tokens_and_reads_on_light_and_dark(qtbot, controller) -> None:
    view = _view(qtbot, controller)
    lines = view.code().split("\n")
    comment = view.op_line(0)
    keyword = next(n for n, t in enumerate(lines) if t.startswith("def "))
    light = {
        "comment": _token_colour(view, comment, 6),
        "keyword": _token_colour(view, keyword, 1),
    }
    assert light["comment"].name() == cv._COLOURS["comment"][0].lower()
    assert light["keyword"].name() == cv._COLOURS["keyword"][0].lower()
    dark = QPalette(view.palette())
    dark.setColor(QPalette.ColorRole.Base, QColor("#1E1E1E"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#DDDDDD"))
    view.setPalette(dark)  # as when the system switches to a dark theme: re-coloured
    assert _token_colour(view, keyword, 1).name() == cv._COLOURS["keyword"][1].lower()
    for base, which in ((QColor("#FFFFFF"), 0), (QColor("#3C3C3C"), 1)):
        for pair in cv._COLOURS.values():
            assert _contrast(QColor(pair[which]), base) >= 4.5, (pair, base.name())


def _contrast(a: QColor, b: QColor) -> float:
    def lum(c: QColor) -> float:
        def ch(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

        return 0.2126 * ch(c.redF()) + 0.7152 * ch(c.greenF()) + 0.0722 * ch(c.blueF())

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_hostile_labels_stay_inside_their_comment_line(qtbot, controller) -> None:
    view = _view(qtbot, controller)
    uid = controller.pipeline.program[5].uid
    assert controller.push(SetOpFields(uid, {"label": 'x\n# [6] fake */ "\\'}))
    view.regenerate()
    # op 5: its comment line, the line setting its label (a string literal) and one call
    assert view.op_line(6) == view.op_line(5) + 3
    ast.parse(view.code())


# -- in the window --------------------------------------------------------------------------------
def _window(qtbot, tmp_path: Path) -> MainWindow:
    create_application()
    settings = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    win = MainWindow(settings, gpu_available=False, autosave_path=tmp_path / "recovery.json")
    qtbot.addWidget(win, before_close_func=lambda w: w.controller.undo_stack.setClean())
    win.resize(1600, 1000)
    win.open_example("chunked-overlap")
    win.show()
    qtbot.waitExposed(win)
    qtbot.wait(30)  # the first-start layout
    return win


def test_view_code_shows_the_dock_beside_the_lanes_keeping_their_height(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    toggle = win.code_dock.toggleViewAction()
    assert toggle in win.menus.view.actions() and toggle.text() == "Code"
    assert not win.code_dock.isVisible()  # first start: the editor keeps its width
    # the first-start layout is applied from the event loop: later on a busy machine
    qtbot.waitUntil(lambda: win.lanes.visible_lanes() >= 5, timeout=5000)
    lanes_height = win.lanes.height()
    toggle.trigger()
    qtbot.waitUntil(lambda: "[0]" in win.code_view.code(), timeout=2000)
    qtbot.wait(20)
    assert win.lanes.height() == lanes_height
    dock = win.code_dock.geometry()
    assert dock.left() >= win.lanes.mapTo(win, win.lanes.rect().topRight()).x()
    assert dock.width() <= win.width() // 3 + 10
    win.controller.set_selection_indexes([7])
    line = win.code_view.op_line(7)
    assert win.code_view.text.firstVisibleBlock().blockNumber() <= line


def test_export_code_saves_the_language_the_filter_picks(qtbot, tmp_path, monkeypatch) -> None:
    win = _window(qtbot, tmp_path)
    pipeline = win.controller.pipeline
    offered: list[str] = []

    suggested_names: list[str] = []

    def answer(path: str, language: str):
        def save(parent, caption, suggested, filters, selected):
            offered.append(selected)
            suggested_names.append(Path(suggested).name)
            return path, dialogs.CODE_FILTERS[language][0]

        return save

    monkeypatch.setattr(dialogs, "save_file_with_filter", answer(str(tmp_path / "p"), "cuda"))
    assert win.export_code()
    assert (tmp_path / "p.cu").read_text() == generate_cuda(pipeline)
    assert offered[-1] == dialogs.CODE_FILTERS["python"][0]  # the code view's language first
    assert suggested_names[-1] == "chunked-overlap.py"  # the example's name, not its title
    assert "CUDA C++" in win.statusBar().currentMessage()
    # a name typed with the other language's suffix gets that language
    monkeypatch.setattr(dialogs, "save_file_with_filter", answer(str(tmp_path / "q.py"), "cuda"))
    win.actions.export_code.trigger()
    assert (tmp_path / "q.py").read_text() == generate_python(pipeline)
    assert not (tmp_path / "q.py.cu").exists()
    # Save as... in the code view offers its language
    win.code_view.set_language("cuda")
    monkeypatch.setattr(dialogs, "save_file_with_filter", answer(str(tmp_path / "r"), "cuda"))
    win.code_view.save_button.click()
    assert offered[-1] == dialogs.CODE_FILTERS["cuda"][0]
    assert (tmp_path / "r.cu").is_file()
    assert win.settings.code_language() == "cuda"  # the next session shows C++ again


def test_export_code_to_an_unwritable_place_says_so(qtbot, tmp_path, monkeypatch) -> None:
    win = _window(qtbot, tmp_path)
    target = tmp_path / "missing" / "p.py"
    monkeypatch.setattr(
        dialogs,
        "save_file_with_filter",
        lambda *a: (str(target), dialogs.CODE_FILTERS["python"][0]),
    )
    errors: list[str] = []
    monkeypatch.setattr(dialogs, "show_error", lambda parent, title, text: errors.append(text))
    assert not win.export_code()
    assert len(errors) == 1 and str(target) in errors[0]
    assert not target.exists()
