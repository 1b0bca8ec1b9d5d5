"""Shared look: colour-blind-safe category colours (Okabe-Ito) and op names for the UI.

One place for colours so the palette, the lanes, the charts and the exported images agree.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QGuiApplication, QPalette

from swimlanes.model.op_kinds import REGISTRY

# Okabe & Ito (2008), distinguishable with the common colour-vision deficiencies.
OKABE_ITO = {
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
    "grey": "#999999",
}

#: Category of each op kind, as shown in the legend (from the op-kind registry).
OP_CATEGORY: dict[str, str] = {k.name: k.category for k in REGISTRY}

#: One colour per legend category (kinds of one category share theirs in the registry).
CATEGORY_COLOUR: dict[str, str] = {k.category: k.colour for k in REGISTRY}

#: Palette/tool names of op kinds.
OP_TITLE: dict[str, str] = {k.name: k.title for k in REGISTRY}


def op_colour(op_kind: str) -> QColor:
    """The fill colour of an op kind."""
    return QColor(CATEGORY_COLOUR[OP_CATEGORY[op_kind]])


def text_colour_on(background: QColor) -> QColor:
    """Black or white, whichever reads better on ``background``."""
    luminance = 0.299 * background.red() + 0.587 * background.green() + 0.114 * background.blue()
    return QColor("#000000") if luminance > 140 else QColor("#FFFFFF")


def is_dark_theme() -> bool:
    """Whether the system palette is dark (window colour darker than its text)."""
    pal = QGuiApplication.palette()
    return (
        pal.color(QPalette.ColorRole.Window).lightness()
        < pal.color(QPalette.ColorRole.WindowText).lightness()
    )
