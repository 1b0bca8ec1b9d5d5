"""Help inside the app: the user guide (the shipped ``docs/*.md``, rendered offline) and the
keyboard shortcut sheet (generated from the window's actions, so that every shortcut anyone
adds to an action is listed without editing a list here).
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QImage, QKeySequence, QTextDocument
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMenu,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from swimlanes.resources import docs_dir

#: Images wider than the page are scaled down to it, less this margin (px).
IMAGE_MARGIN_PX = 40
_PAGE_LINK = re.compile(r"^\d+\.\s+\[([^\]]+)\]\(([\w.-]+\.md)\)", re.MULTILINE)


def guide_pages(folder: Path | None = None) -> list[tuple[str, str]]:
    """(title, file name) of the guide's pages in the order of its index's contents list."""
    folder = folder or docs_dir()
    index = folder / "index.md"
    if not index.is_file():
        return []
    pages = [("Contents", "index.md")]
    for title, name in _PAGE_LINK.findall(index.read_text(encoding="utf-8")):
        if (folder / name).is_file():
            pages.append((title, name))
    return pages


class GuideBrowser(QTextBrowser):
    """Renders the guide's Markdown pages with their images scaled to the page; follows
    links between pages itself, and hands web links to the desktop's browser."""

    def __init__(self, folder: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.folder = folder
        self.setOpenLinks(False)
        self.setSearchPaths([str(folder)])
        self.anchorClicked.connect(self.follow)
        #: Set when a link could not be followed (shown under the page).
        self.problem = ""

    def show_page(self, name: str) -> None:
        """Show a page of the guide (a file name such as ``editor.md``, maybe with ``#...``)."""
        self.follow(QUrl.fromLocalFile(str(self.folder / name)))

    def follow(self, url: QUrl) -> None:
        """Open a link: a guide page here, a web page or another local file outside."""
        if url.isRelative():
            url = self.source().resolved(url)
        self.problem = ""
        if url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)
            return
        path = Path(url.toLocalFile())
        if path.suffix == ".md" and path.is_file() and path.parent == self.folder:
            self.setSource(url, QTextDocument.ResourceType.MarkdownResource)
            if url.hasFragment():
                self.scrollToAnchor(url.fragment())
        elif path.is_file():
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))
        else:
            self.problem = f"{url.toString()} is not part of the installed guide"

    def loadResource(self, kind: int, url: QUrl | str) -> object:  # noqa: N802 - Qt's name
        if kind == QTextDocument.ResourceType.ImageResource.value:
            url = QUrl(url) if isinstance(url, str) else url
            path = Path(self.source().resolved(url).toLocalFile() or url.toLocalFile())
            image = QImage(str(path))
            if not image.isNull():
                room = max(200, self.viewport().width() - IMAGE_MARGIN_PX)
                if image.width() > room:
                    mode = Qt.TransformationMode.SmoothTransformation
                    image = image.scaledToWidth(room, mode)
                return image
        return super().loadResource(kind, url)


class UserGuide(QDialog):
    """Help > User guide: the pages on the left, the page on the right, back and forward."""

    def __init__(self, parent: QWidget | None = None, folder: Path | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("user_guide")
        self.setWindowTitle("Swimlanes user guide")
        self.folder = folder or docs_dir()
        self.browser = GuideBrowser(self.folder, self)
        self.pages = QListWidget(self)
        for title, name in guide_pages(self.folder):
            item = QListWidgetItem(title)
            item.setData(Qt.ItemDataRole.UserRole, name)
            self.pages.addItem(item)
        self.pages.setMaximumWidth(240)
        self.pages.itemActivated.connect(self._open_item)
        self.pages.itemClicked.connect(self._open_item)
        self.note = QLabel(self)
        self.note.setStyleSheet("color: #D55E00;")
        back, forward = QToolButton(self), QToolButton(self)
        back.setText("◀ Back")
        forward.setText("Forward ▶")
        back.clicked.connect(self.browser.backward)
        forward.clicked.connect(self.browser.forward)
        self.browser.backwardAvailable.connect(back.setEnabled)
        self.browser.forwardAvailable.connect(forward.setEnabled)
        back.setEnabled(False)
        forward.setEnabled(False)
        self.browser.sourceChanged.connect(self._on_source_changed)
        self.browser.anchorClicked.connect(lambda _url: self.note.setText(self.browser.problem))
        top = QHBoxLayout()
        top.addWidget(back)
        top.addWidget(forward)
        top.addWidget(self.note, 1)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.pages)
        split.addWidget(self.browser)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        self.resize(1100, 760)
        if (self.folder / "index.md").is_file():
            self.browser.show_page("index.md")
        else:
            self.browser.setPlainText(f"The user guide is not installed ({self.folder}).")

    def show_page(self, name: str) -> None:
        self.browser.show_page(name)

    def page_name(self) -> str:
        """The file name of the page shown."""
        return Path(self.browser.source().toLocalFile()).name

    def _open_item(self, item: QListWidgetItem) -> None:
        self.browser.show_page(str(item.data(Qt.ItemDataRole.UserRole)))

    def _on_source_changed(self, url: QUrl) -> None:
        name = Path(url.toLocalFile()).name  # source() may still be the previous page here
        for row in range(self.pages.count()):
            item = self.pages.item(row)
            if item.data(Qt.ItemDataRole.UserRole) == name:
                self.pages.setCurrentItem(item)


# -- keyboard shortcuts ---------------------------------------------------------------------
def _plain(text: str) -> str:
    """An action's text as shown (no mnemonic ampersands or trailing dots)."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip(".").strip()


def _menu_paths(window: QMainWindow) -> dict[int, str]:
    """id(action) -> "Edit > Undo"-style menu path, for actions in the menu bar."""
    paths: dict[int, str] = {}

    def walk(menu: QMenu, prefix: str) -> None:
        for action in menu.actions():
            if action.menu() is not None:
                walk(action.menu(), f"{prefix}{_plain(action.menu().title())} > ")
            elif not action.isSeparator():
                paths.setdefault(id(action), prefix.removesuffix(" > "))

    for action in window.menuBar().actions():
        if action.menu() is not None:
            walk(action.menu(), f"{_plain(action.menu().title())} > ")
    return paths


def shortcut_rows(window: QMainWindow) -> list[tuple[str, str, str]]:
    """(menu, action, shortcuts) for every action of ``window`` that has a shortcut: menu
    actions in menu order first, then the others (views' own actions) by name."""
    paths = _menu_paths(window)
    order = {key: n for n, key in enumerate(paths)}
    rows: list[tuple[int, str, str, str]] = []
    seen: set[int] = set()
    for action in window.findChildren(QAction):
        keys = [k for k in action.shortcuts() if not k.isEmpty()]
        if not keys or id(action) in seen or not _plain(action.text()):
            continue
        seen.add(id(action))
        text = ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in keys)
        menu = paths.get(id(action), "")
        rank = order.get(id(action), len(order))
        rows.append((rank, menu or "(no menu)", _plain(action.text()), text))
    rows.sort(key=lambda r: (r[0], r[2].lower()))
    return [(menu, name, keys) for _rank, menu, name, keys in rows]


class ShortcutSheet(QDialog):
    """Help > Keyboard shortcuts: every action with a shortcut, where it is, and its keys."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.setObjectName("shortcut_sheet")
        self.setWindowTitle("Keyboard shortcuts")
        rows = shortcut_rows(window)
        self.table = QTableWidget(len(rows), 3, self)
        self.table.setHorizontalHeaderLabels(["Menu", "Action", "Keys"])
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setStretchLastSection(True)
        note = QLabel(
            "Undo and redo work wherever the keyboard focus is; a field being typed in "
            "commits first."
        )
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.resize(620, 640)


def open_guide(window: QWidget, page: str | None = None) -> UserGuide:
    """Show the window's user guide (one per window, raised if open), at ``page`` if given."""
    guide = window.findChild(UserGuide, "user_guide")
    if guide is None:
        guide = UserGuide(window)
    if page:
        guide.show_page(page)
    guide.show()
    guide.raise_()
    guide.activateWindow()
    return guide


def open_shortcuts(window: QMainWindow) -> ShortcutSheet:
    """Show the shortcut sheet, built afresh: actions may have been added since."""
    old = window.findChild(ShortcutSheet, "shortcut_sheet")
    if old is not None:
        old.deleteLater()
    sheet = ShortcutSheet(window)
    sheet.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    sheet.show()
    return sheet
