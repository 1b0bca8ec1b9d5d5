"""Chart axes: time in auto units (ns, µs, ms, s) and row titles."""

from __future__ import annotations

import pyqtgraph as pg


class TimeAxisItem(pg.AxisItem):
    """Bottom axis for values in µs from the timeline start, shown in s/ms/µs/ns as fits.

    pyqtgraph's SI-prefix scaling picks the unit once the µs values are scaled to seconds.
    """

    def __init__(self, **kwargs) -> None:  # noqa: ANN003 - forwarded to AxisItem
        super().__init__("bottom", **kwargs)
        self.setScale(1e-6)
        self.setLabel("time since start", units="s")

    def updateAutoSIPrefix(self) -> None:  # noqa: N802 - pyqtgraph's name
        # pyqtgraph scales to ms/µs only while the axis title shows; stacked charts hide the
        # upper one's title, and its ticks must still read in the same unit as the lower's.
        lo, hi = self.range
        value = max(abs(lo), abs(hi)) * self.scale
        scale, prefix = 1.0, ""
        if any(low <= value <= high for low, high in self.getSIPrefixEnableRanges()):
            scale, prefix = pg.functions.siScale(value, power=self.unitPower)
        self.autoSIPrefixScale = scale
        self.labelUnitPrefix = prefix
        self._updateLabel()


class RowAxisItem(pg.AxisItem):
    """Left axis with one title per row, centred on the row; no numbers, no grid."""

    def __init__(self, **kwargs) -> None:  # noqa: ANN003 - forwarded to AxisItem
        super().__init__("left", **kwargs)
        self.setStyle(tickLength=0, autoExpandTextSpace=False)
        self._titles: list[str] = []

    def set_titles(self, titles: list[str]) -> None:
        self._titles = list(titles)
        self.setTicks([[(i + 0.5, t) for i, t in enumerate(self._titles)], []])
