"""Merged sub-pixel bars drawn as shaded pixel strips: alpha = the fraction of time covered.

Zoomed out, a row of a million bars is one coverage value per pixel column (see
:class:`swimlanes.ui.gantt.coverage.Coverage`). On a raster device (the screen, a PNG) each
row of it becomes one 1-pixel-high ARGB line filling its bar's rectangle as a texture: one
fill per row and colour, whatever the number of bars or how ragged the coverage, where
rectangles would need one per run of equal shade.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QBrush, QColor, QImage, QPaintEngine, QPainter

from swimlanes.ui.gantt.coverage import Coverage

#: The least alpha of a pixel column with any coverage: a lone short op stays visible.
MIN_ALPHA = 28


def is_raster(painter: QPainter) -> bool:
    """Whether ``painter`` paints pixels (screen, image) rather than vectors (SVG, PDF)."""
    engine = painter.paintEngine()
    return engine is not None and engine.type() == QPaintEngine.Type.Raster


def coverage_alpha(fraction: np.ndarray) -> np.ndarray:
    """Alpha (0-255) of each cell: proportional to its covered fraction, at least MIN_ALPHA
    where anything is covered."""
    alpha = np.rint(np.clip(fraction, 0.0, 1.0) * 255.0).astype(np.uint32)
    return np.where(fraction > 1e-9, np.maximum(alpha, MIN_ALPHA), 0).astype(np.uint32)


def coverage_pixels(fraction: np.ndarray, colour: QColor) -> np.ndarray:
    """Premultiplied ARGB32 pixels of ``colour`` with :func:`coverage_alpha` (rows, columns)."""
    return _colour_table(colour.rgb())[coverage_alpha(fraction)]


@lru_cache(maxsize=64)
def _colour_table(rgb: int) -> np.ndarray:
    """The 256 premultiplied ARGB32 pixels of one colour, by alpha."""
    a = np.arange(256, dtype=np.uint32)
    r, g, b = (np.uint32((rgb >> shift) & 0xFF) for shift in (16, 8, 0))
    half = np.uint32(127)
    return (
        (a << 24)
        | (((r * a + half) // 255) << 16)
        | (((g * a + half) // 255) << 8)
        | ((b * a + half) // 255)
    ).astype(np.uint32)


def draw_coverages(
    painter: QPainter,
    layers: list[tuple[QColor, Coverage, int]],
    y_map: tuple[float, float],
    bar_top: float,
    bar_height: float,
    dominant: np.ndarray | None = None,
) -> int:
    """Paint each (colour, coverage, group number) layer as shaded strips; where groups share a
    row, the row's ``dominant`` group (the one with the most busy time there) goes last, on
    top. Returns how many strips were drawn.

    A strip is a rectangle filled with a 1-pixel-high texture (the row's pixels), tiled down
    the bar: Qt's texture fill, several times cheaper than stretching an image.
    """
    sy, dy = y_map
    jobs = []
    for colour, cov, group in layers:
        if not cov.fraction.size:
            continue
        pixels = np.ascontiguousarray(coverage_pixels(cov.fraction, colour))
        for r in np.flatnonzero(pixels.any(axis=1)).tolist():
            on_top = dominant is not None and int(dominant[r]) == group
            jobs.append((on_top, pixels, r, cov.left))
    jobs.sort(key=lambda j: j[0])  # stable: the dominant ones last
    for _, pixels, r, left in jobs:
        width = pixels.shape[1]
        line = QImage(
            pixels[r].data, width, 1, 4 * width, QImage.Format.Format_ARGB32_Premultiplied
        )
        ya = (r + bar_top) * sy + dy
        yb = (r + bar_top + bar_height) * sy + dy
        painter.setBrushOrigin(QPointF(left, 0.0))
        painter.fillRect(QRectF(left, min(ya, yb), width, abs(yb - ya)), QBrush(line))
    painter.setBrushOrigin(QPointF(0.0, 0.0))
    return len(jobs)
