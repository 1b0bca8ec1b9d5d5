"""The code view: the pipeline as the Numba CUDA script or CUDA C++ program it exports to.

The text comes from swimlanes.codegen, the same generators as ``swimlanes codegen`` and File >
Export code, so what the view shows is what gets saved. It is regenerated a moment after edits
stop, and only while the view is shown, so editing a large pipeline never waits for it. Each
op's code starts with a ``# [i]`` (``// [i]``) comment line: selecting ops in the editor scrolls
there and marks their lines, and clicking in an op's lines selects that op.
"""

from __future__ import annotations

import bisect
import re

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFontDatabase,
    QGuiApplication,
    QPalette,
    QShowEvent,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from swimlanes.codegen import LANGUAGES
from swimlanes.ui.document_controller import DocumentController

#: Languages as the user knows them, with the key of swimlanes.codegen.LANGUAGES.
LANGUAGE_TITLES = {"python": "Numba CUDA Python", "cuda": "CUDA C++"}
#: Regenerate this long after the last edit of a burst.
REGENERATE_DELAY_MS = 300
#: Above this many lines the text is shown without colours: highlighting runs on the UI thread.
HIGHLIGHT_LINE_LIMIT = 20000
#: The code dock's first width, in columns of code.
CODE_COLUMNS = 80
#: Lines of context kept above an op's code when the view scrolls to it.
CONTEXT_LINES = 2

# The loop that frees allocations after the ops' code, in either language (see swimlanes.codegen).
_CLOSING_LOOP = ("    for ptr in allocations:", "    for (void* p : allocations)")
# The line that starts each op's code: "    # [12] kernel K1" or "    // [12] kernel K1".
_OP_LINE = re.compile(r"^    (?:#|//) \[(\d+)\]")

_KEYWORDS = {
    "python": (
        "and as assert break class continue def del elif else except False finally for from "
        "global if import in is lambda None nonlocal not or pass raise return True try while "
        "with yield"
    ),
    "cuda": (
        "auto bool break case char const constexpr continue default delete do double else enum "
        "extern false float for if inline int long namespace new nullptr return short signed "
        "size_t sizeof static static_cast struct switch template true typedef unsigned using "
        "void volatile while __global__ __device__ __host__ __forceinline__ asm std"
    ),
}

# (light, dark) colours of each kind of token, with a contrast of at least 4.5 (WCAG AA) on a
# white and on a dark grey (#3C3C3C or darker) background.
_COLOURS = {
    "keyword": ("#CF222E", "#FF8B82"),
    "string": ("#116329", "#A5D6FF"),
    "comment": ("#6E7781", "#A9B1BA"),
    "number": ("#0550AE", "#79C0FF"),
    "directive": ("#8250DF", "#D2A8FF"),
}


class CodeHighlighter(QSyntaxHighlighter):
    """Keywords, strings, comments, numbers (and decorators / preprocessor lines) of the
    generated Python or CUDA C++; multi-line strings and comments carry over between lines."""

    # Block states: inside a Python triple-quoted string (by its quotes) / a C block comment.
    _IN_TRIPLE = {'"""': 1, "'''": 3}
    _IN_BLOCK_COMMENT = 2

    def __init__(self, document: QTextDocument, language: str = "python") -> None:
        super().__init__(document)
        self.formats: dict[str, QTextCharFormat] = {}
        self.update_colours()
        self.set_language(language)

    def set_language(self, language: str) -> None:
        self.language = language
        self._compiled = self._rules()

    def update_colours(self, background: QColor | None = None) -> None:
        """Pick the token colours for text on ``background`` (default: the app palette's)."""
        if background is None:
            background = QGuiApplication.palette().color(QPalette.ColorRole.Base)
        dark = 1 if background.lightness() < 128 else 0
        for kind, pair in _COLOURS.items():
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(pair[dark]))
            if kind == "keyword":
                fmt.setFontWeight(700)
            if kind == "comment":
                fmt.setFontItalic(True)
            self.formats[kind] = fmt

    def _rules(self) -> list[tuple[re.Pattern[str], str]]:
        words = "|".join(_KEYWORDS[self.language].split())
        rules = [
            (re.compile(rf"\b(?:{words})\b"), "keyword"),
            (
                re.compile(r"\b(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)[uUlLfF]*\b"),
                "number",
            ),
        ]
        if self.language == "python":
            rules.append((re.compile(r"^\s*@[\w.]+"), "directive"))
        else:
            rules.append((re.compile(r"^\s*#\s*\w+"), "directive"))
        return rules

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        if self.document().blockCount() > HIGHLIGHT_LINE_LIMIT:
            return
        for pattern, kind in self._compiled:
            for m in pattern.finditer(text):
                self.setFormat(m.start(), m.end() - m.start(), self.formats[kind])
        # Strings and comments last: a keyword or number inside one is not one.
        self.setCurrentBlockState(0)
        if self.language == "python":
            self._python_strings_and_comments(text)
        else:
            self._cuda_strings_and_comments(text)

    def _python_strings_and_comments(self, text: str) -> None:
        i = 0
        for quotes, state in self._IN_TRIPLE.items():
            if self.previousBlockState() == state:
                i = self._until(text, 0, quotes, "string", state)
        while 0 <= i < len(text):
            c = text[i]
            quotes = text[i : i + 3]
            if quotes in self._IN_TRIPLE:
                i = self._until(text, i + 3, quotes, "string", self._IN_TRIPLE[quotes], i)
            elif c in "\"'":
                i = self._string_end(text, i, c)
            elif c == "#":
                self.setFormat(i, len(text) - i, self.formats["comment"])
                return
            else:
                i += 1

    def _cuda_strings_and_comments(self, text: str) -> None:
        i = 0
        if self.previousBlockState() == self._IN_BLOCK_COMMENT:
            i = self._until(text, 0, "*/", "comment", self._IN_BLOCK_COMMENT)
        while 0 <= i < len(text):
            c = text[i]
            if text.startswith("//", i):
                self.setFormat(i, len(text) - i, self.formats["comment"])
                return
            if text.startswith("/*", i):
                i = self._until(text, i + 2, "*/", "comment", self._IN_BLOCK_COMMENT, i)
            elif c in "\"'":
                i = self._string_end(text, i, c)
            else:
                i += 1

    def _until(
        self, text: str, i: int, end: str, kind: str, state: int, start: int | None = None
    ) -> int:
        """Format from ``start`` (default ``i``) to the first ``end`` at or after ``i``; if the
        line ends first, mark the block as still inside and return -1."""
        start = i if start is None else start
        at = text.find(end, i)
        if at < 0:
            self.setFormat(start, len(text) - start, self.formats[kind])
            self.setCurrentBlockState(state)
            return -1
        self.setFormat(start, at + len(end) - start, self.formats[kind])
        return at + len(end)

    def _string_end(self, text: str, i: int, quote: str) -> int:
        j = i + 1
        while j < len(text) and text[j] != quote:
            j += 2 if text[j] == "\\" else 1
        j = min(j + 1, len(text))
        self.setFormat(i, j - i, self.formats["string"])
        return j


def _program_end(lines: list[str], op_lines: list[int]) -> int:
    """The line after the last op's code: where the program's closing synchronize starts
    (the line before its loop over allocations), else the first line at a smaller indent."""
    if not op_lines:
        return 0
    after = range(op_lines[-1] + 1, len(lines))
    closing = next((n for n in after if lines[n].startswith(_CLOSING_LOOP)), None)
    if closing is not None:
        return closing - 1
    return next((n for n in after if not lines[n].startswith("    ")), len(lines))


class CodeView(QWidget):
    """Read-only generated code of the controller's pipeline, with a language switch, Copy and
    Save as... ``save_requested(language)`` asks the window to export (File > Export code);
    ``message(str)`` is for the status bar."""

    save_requested = Signal(str)
    message = Signal(str)

    def __init__(self, controller: DocumentController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("code_view")
        self.controller = controller
        self._stale = True
        self._lines: list[str] = []  # the text shown, by line
        self._op_lines: list[int] = []  # first line of each op's code, by program index
        self._end_line = 0  # the line after the last op's code
        self._updating = False

        self.language_combo = QComboBox()
        self.language_combo.setObjectName("code_language")
        for key, title in LANGUAGE_TITLES.items():
            self.language_combo.addItem(title, key)
        self.language_combo.setToolTip("Language of the generated code")
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the whole program to the clipboard")
        self.save_button = QPushButton("Save as...")
        self.save_button.setToolTip("Save the program as a .py or .cu file (File > Export code)")
        self.info = QLabel()
        self.info.setObjectName("code_info")
        top = QHBoxLayout()
        top.setContentsMargins(4, 2, 4, 2)
        top.addWidget(self.language_combo)
        top.addWidget(self.info, 1)
        top.addWidget(self.copy_button)
        top.addWidget(self.save_button)

        self.text = QPlainTextEdit()
        self.text.setObjectName("code_text")
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setUndoRedoEnabled(False)
        self.highlighter = CodeHighlighter(self.text.document(), self.language())
        self.highlighter.update_colours(self._background())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(top)
        layout.addWidget(self.text, 1)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REGENERATE_DELAY_MS)
        self._timer.timeout.connect(self._regenerate_if_shown)
        controller.changed.connect(self._on_changed)
        controller.selection_changed.connect(self._on_selection_changed)
        self.language_combo.currentIndexChanged.connect(self._on_language_changed)
        self.copy_button.clicked.connect(self.copy_all)
        self.save_button.clicked.connect(lambda: self.save_requested.emit(self.language()))
        self.text.cursorPositionChanged.connect(self._on_cursor_moved)

    # -- public -------------------------------------------------------------------------------
    def language(self) -> str:
        """The key of the shown language in swimlanes.codegen.LANGUAGES."""
        return str(self.language_combo.currentData())

    def set_language(self, language: str) -> None:
        i = self.language_combo.findData(language)
        if i >= 0:
            self.language_combo.setCurrentIndex(i)

    def code(self) -> str:
        return self.text.toPlainText()

    def op_line(self, index: int) -> int | None:
        """The line (0-based) of op ``index``'s ``[index]`` comment, once generated."""
        return self._op_lines[index] if 0 <= index < len(self._op_lines) else None

    def regenerate(self) -> None:
        """Generate the code of the current pipeline now, keeping the scroll position."""
        self._timer.stop()
        self._stale = False
        pipeline = self.controller.pipeline
        try:
            text = LANGUAGES[self.language()](pipeline)
        except Exception as err:  # noqa: BLE001 - a generator bug must not break editing
            text = f"Cannot generate {LANGUAGE_TITLES[self.language()]} code: {err}"
        lines = text.split("\n")
        if lines != self._lines:
            self._set_text(text, lines)
        self.info.setText(f"{len(pipeline.program)} ops, {self.text.blockCount()} lines")
        self._mark_selection(scroll=False)

    def copy_all(self) -> None:
        if self._stale:
            self.regenerate()
        QGuiApplication.clipboard().setText(self.code())
        self.message.emit(
            f"Copied the {LANGUAGE_TITLES[self.language()]} program "
            f"({self.text.blockCount()} lines) to the clipboard"
        )

    # -- updates ------------------------------------------------------------------------------
    def _set_text(self, text: str, lines: list[str]) -> None:
        bar = self.text.verticalScrollBar()
        top = bar.value()
        self._updating = True
        try:
            if not self._replace_changed_lines(lines):
                self.text.setPlainText(text)
        finally:
            self._updating = False
        self._lines = lines
        self._op_lines = [n for n, line in enumerate(lines) if _OP_LINE.match(line)]
        self._end_line = _program_end(lines, self._op_lines)
        bar.setValue(top)

    def _replace_changed_lines(self, lines: list[str]) -> bool:
        """Replace only the lines between the unchanged head and tail: an edit changes a few
        lines, and only those are laid out and highlighted again. False if that does not fit
        (nothing shown yet, or no common tail), for the caller to replace the whole text."""
        old = self._lines
        if not old or self.text.document().blockCount() != len(old):
            return False
        limit = min(len(old), len(lines))
        head = 0
        while head < limit and old[head] == lines[head]:
            head += 1
        tail = 0
        while tail < limit - head and old[-1 - tail] == lines[-1 - tail]:
            tail += 1
        if tail == 0:
            return False
        doc = self.text.document()
        cursor = QTextCursor(doc.findBlockByNumber(head))
        cursor.setPosition(
            doc.findBlockByNumber(len(old) - tail).position(), QTextCursor.MoveMode.KeepAnchor
        )
        cursor.insertText("".join(line + "\n" for line in lines[head : len(lines) - tail]))
        return True

    def _on_changed(self) -> None:
        self._stale = True
        if self.isVisible():
            self._timer.start()  # restarted by each edit: one regeneration per burst

    def _regenerate_if_shown(self) -> None:
        if self.isVisible():
            self.regenerate()

    def _on_language_changed(self) -> None:
        self.highlighter.set_language(self.language())
        self.text.verticalScrollBar().setValue(0)  # other lines: the old position means nothing
        self._stale = True
        if self.isVisible():
            self.regenerate()
            self._mark_selection(scroll=True)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._stale:
            self.regenerate()
        self._mark_selection(scroll=True)  # the selection may have changed while hidden

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.highlighter.update_colours(self._background())
            self.highlighter.rehighlight()

    def _background(self) -> QColor:
        # This view's palette, not the text's: a change reaches this view before its children.
        return self.palette().color(QPalette.ColorRole.Base)

    # -- selection ----------------------------------------------------------------------------
    def _op_range(self, index: int) -> tuple[int, int]:
        """First line and the line after the last of op ``index``'s code."""
        first = self._op_lines[index]
        nxt = self._op_lines[index + 1] if index + 1 < len(self._op_lines) else self._end_line
        return first, nxt

    def _on_selection_changed(self) -> None:
        if self.isVisible() and not self._stale:
            self._mark_selection(scroll=True)

    def _mark_selection(self, *, scroll: bool) -> None:
        """Shade the selected ops' lines; with ``scroll``, bring the first into view."""
        indexes = [i for i in self.controller.selected_indexes() if i < len(self._op_lines)]
        shade = QColor(self.palette().highlight().color())
        shade.setAlpha(60)
        marks = []
        for i in indexes:
            first, end = self._op_range(i)
            mark = QTextEdit.ExtraSelection()
            mark.format.setBackground(shade)
            mark.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            cursor = QTextCursor(self.text.document().findBlockByNumber(first))
            cursor.movePosition(
                QTextCursor.MoveOperation.Down, QTextCursor.MoveMode.KeepAnchor, end - first - 1
            )
            cursor.movePosition(
                QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor
            )
            mark.cursor = cursor
            marks.append(mark)
        self.text.setExtraSelections(marks)
        if scroll and indexes:
            self._scroll_to_lines(*self._op_range(indexes[0]))

    def _scroll_to_lines(self, first: int, end: int) -> None:
        """Show lines [first, end) with a little context above, unless all are in view."""
        bar = self.text.verticalScrollBar()
        top = bar.value()  # without line wrap, the scroll bar counts lines
        shown = max(
            1, self.text.viewport().height() // max(1, self.text.fontMetrics().lineSpacing())
        )
        if top <= first and end <= top + shown:
            return
        bar.setValue(max(0, first - CONTEXT_LINES))

    def _on_cursor_moved(self) -> None:
        """A click (or key) in an op's lines selects that op in the editor."""
        if self._updating or not self._op_lines:
            return
        line = self.text.textCursor().blockNumber()
        i = bisect.bisect_right(self._op_lines, line) - 1
        if i < 0 or line >= self._end_line:
            return
        if self.controller.selected_indexes() != [i]:
            self.controller.set_selection_indexes([i])


class CodeDock(QDockWidget):
    """The dock of a CodeView (View > Code). The first time it is shown it takes the width of
    about CODE_COLUMNS columns of code, but at most a third of the window."""

    def __init__(self, view: CodeView, window: QMainWindow) -> None:
        super().__init__("Code", window)
        self.setObjectName("code_dock")
        self.setWidget(view)
        self.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.toggleViewAction().setStatusTip(
            "Show the pipeline as Numba CUDA Python or CUDA C++ code"
        )
        self._sized = False
        self.visibilityChanged.connect(self._size_once)

    def _size_once(self, visible: bool) -> None:
        window = self.parentWidget()
        if not visible or self._sized or self.isFloating() or not isinstance(window, QMainWindow):
            return
        self._sized = True
        view = self.widget()
        text = view.text if isinstance(view, CodeView) else view
        columns = text.fontMetrics().horizontalAdvance("x" * CODE_COLUMNS) + 40  # + scroll bar
        width = min(columns, window.width() // 3)  # the lanes keep most of the width
        window.resizeDocks([self], [width], Qt.Orientation.Horizontal)
