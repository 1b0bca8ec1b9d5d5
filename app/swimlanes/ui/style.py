"""Shared look: colour-blind-safe category colours (Okabe-Ito) and op names for the UI.

One place for colours so the palette, the lanes, the charts and the exported images agree.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QGuiApplication, QPalette

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

#: Category of each op kind, as shown in the legend.
OP_CATEGORY: dict[str, str] = {
    "h2d": "H2D copy",
    "d2h": "D2H copy",
    "d2d": "D2D copy",
    "memset": "Memset",
    "kernel": "Kernel",
    "event_record": "Event",
    "event_wait": "Event",
    "event_sync": "Sync",
    "stream_sync": "Sync",
    "device_sync": "Sync",
    "host": "Host work",
    "host_func": "Host function",
    "malloc": "Memory",
    "free": "Memory",
}

CATEGORY_COLOUR: dict[str, str] = {
    "H2D copy": OKABE_ITO["sky_blue"],
    "D2H copy": OKABE_ITO["orange"],
    "D2D copy": OKABE_ITO["yellow"],
    "Memset": OKABE_ITO["grey"],
    "Kernel": OKABE_ITO["bluish_green"],
    "Event": OKABE_ITO["reddish_purple"],
    "Sync": OKABE_ITO["vermillion"],
    "Host work": OKABE_ITO["blue"],
    "Host function": OKABE_ITO["blue"],
    # Darker than memset's grey so the legend tells the two apart.
    "Memory": "#4D4D4D",
}

#: Palette/tool names of op kinds.
OP_TITLE: dict[str, str] = {
    "h2d": "H2D copy",
    "d2h": "D2H copy",
    "d2d": "D2D copy",
    "memset": "Memset",
    "kernel": "Kernel",
    "event_record": "Event record",
    "event_wait": "Event wait",
    "stream_sync": "Stream sync",
    "event_sync": "Event sync",
    "device_sync": "Device sync",
    "host": "Host work",
    "host_func": "Host function",
    "malloc": "Malloc",
    "free": "Free",
}


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
