"""Help inside the app: the offline user guide, the generated shortcut sheet, and an example's
lesson the first time it opens."""

from __future__ import annotations

import tomllib
from pathlib import Path

from PySide6.QtCore import QSettings, QUrl
from PySide6.QtGui import QAction, QTextDocument
from PySide6.QtWidgets import QDialog

from swimlanes.resources import docs_dir
from swimlanes.ui.app import create_application
from swimlanes.ui.help_viewer import ShortcutSheet, UserGuide, guide_pages, shortcut_rows
from swimlanes.ui.lessons import LessonDialog, shown_lessons
from swimlanes.ui.main_window import MainWindow
from swimlanes.ui.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def _window(qtbot, tmp_path: Path, *, show: bool = True) -> MainWindow:
    create_application()
    settings = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    win = MainWindow(settings, gpu_available=False, autosave_path=tmp_path / "recovery.json")
    qtbot.addWidget(win, before_close_func=lambda w: w.controller.undo_stack.setClean())
    if show:
        win.show()
        qtbot.waitExposed(win)
    return win


def test_f1_opens_the_guide_whose_links_and_images_work(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    assert win.actions.guide.shortcut().toString() == "F1"
    assert win.actions.guide in win.menus.help.actions()
    win.actions.guide.trigger()
    guide = win.findChild(UserGuide, "user_guide")
    assert guide is not None and guide.isVisible()
    assert guide.page_name() == "index.md"
    assert "Swimlanes user guide" in guide.browser.toPlainText()
    titles = [guide.pages.item(r).text() for r in range(guide.pages.count())]
    assert titles[:3] == ["Contents", "Getting started", "The editor"]
    # the screenshot on the index page is loaded from the shipped images, scaled to the page
    image = guide.browser.document().resource(
        QTextDocument.ResourceType.ImageResource.value, QUrl("images/main-window.png")
    )
    assert image is not None and not image.isNull()
    assert image.width() <= guide.browser.viewport().width()
    # a link between pages opens the other page, back returns
    guide.browser.anchorClicked.emit(QUrl("editor.md"))
    assert guide.page_name() == "editor.md"
    assert guide.pages.currentItem().text() == "The editor"
    assert "The operations palette" in guide.browser.toPlainText()
    guide.browser.backward()
    assert guide.page_name() == "index.md"
    guide.browser.anchorClicked.emit(QUrl("no-such-page.md"))
    assert (
        guide.page_name() == "index.md" and "not part of the installed guide" in guide.note.text()
    )


def test_every_page_of_the_index_is_listed() -> None:
    pages = [name for _title, name in guide_pages()]
    assert pages[0] == "index.md" and len(pages) >= 9
    assert {"editor.md", "comparing.md", "tutorial.md", "file-format.md"} <= set(pages)


def test_the_guide_ships_with_the_package() -> None:
    assert (docs_dir() / "index.md").is_file()
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"]["swimlanes._docs"] == "docs"
    assert "swimlanes._docs" in setuptools["packages"]
    shipped = setuptools["package-data"]["swimlanes._docs"]
    assert "*.md" in shipped and "images/*.png" in shipped


def test_the_shortcut_sheet_lists_every_action_with_a_shortcut(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    # an action someone adds later is listed without editing the sheet
    extra = QAction("Frobnicate the lanes", win)
    extra.setShortcut("Ctrl+Alt+F")
    win.menus.view.addAction(extra)
    win.actions.shortcuts.trigger()
    sheet = win.findChild(ShortcutSheet, "shortcut_sheet")
    assert sheet is not None and sheet.isVisible()
    shown = {
        (sheet.table.item(r, 1).text(), sheet.table.item(r, 2).text())
        for r in range(sheet.table.rowCount())
    }
    with_keys = [a for a in win.findChildren(QAction) if not a.shortcut().isEmpty() and a.text()]
    assert len(shown) >= len({a.text() for a in with_keys}) - 1
    assert ("Frobnicate the lanes", "Ctrl+Alt+F") in shown
    assert ("Undo", "Ctrl+Z") in shown
    assert any(name == "Redo" and "Ctrl+Y" in keys for name, keys in shown)
    rows = shortcut_rows(win)
    assert ("View", "Frobnicate the lanes", "Ctrl+Alt+F") in rows
    assert rows[0][0] == "File"  # in menu order


def _lessons(win: MainWindow) -> list[LessonDialog]:
    return [d for d in win.findChildren(LessonDialog) if d.isVisible()]


def test_an_examples_lesson_shows_the_first_time_it_opens(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    win.open_example("two-streams")
    qtbot.waitUntil(lambda: len(_lessons(win)) == 1)
    dialog = _lessons(win)[0]
    assert "Two streams" in dialog.windowTitle()
    assert not dialog.isModal()  # the example stays usable while reading
    dialog.close()
    qtbot.wait(20)
    win.open_example("two-streams")  # the second time: no lesson
    qtbot.wait(50)
    assert _lessons(win) == []
    assert shown_lessons(win.settings) == ["two-streams"]
    win.actions.lesson.trigger()  # but Help > Lesson always shows it
    assert len(_lessons(win)) == 1


def test_dont_show_again_is_remembered(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    win.open_example("two-streams")
    qtbot.waitUntil(lambda: len(_lessons(win)) == 1)
    _lessons(win)[0].show_on_open.setChecked(False)
    _lessons(win)[0].close()
    win.open_example("ping-pong")
    qtbot.wait(50)
    assert _lessons(win) == []
    again = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    assert again.q.value("lessons/show_on_first_open") == "false"


def test_no_lesson_pops_up_over_a_window_that_is_not_shown(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path, show=False)
    win.open_example("two-streams")
    qtbot.wait(50)
    assert not [d for d in win.findChildren(QDialog) if d.isVisible()]
    assert shown_lessons(win.settings) == []  # still to come, when it can be read
