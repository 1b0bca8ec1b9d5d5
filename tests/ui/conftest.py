"""Fixtures shared by the editor tests."""

from __future__ import annotations

import pytest
from test_editor_helpers import Editor, sample


@pytest.fixture
def editor(qtbot) -> Editor:
    """The four editor widgets on the sample document, shown."""
    ed = Editor(sample())
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    return ed
