"""Timeline images (PNG, SVG, PDF) drawn by one QPainter routine for all three formats.

pyqtgraph's SVGExporter fails on Qt 6.11/6.12, and a screen grab is tied to a window; this
paints the charts directly (title, legend, rows, bars, SM occupancy, time axis) onto a QImage,
a QSvgGenerator or a QPdfWriter, culled to the visible range so the files stay small.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QMarginsF, QPointF, QRect, QRectF, QSize, QSizeF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QImage,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
    QPen,
)

from swimlanes.model.atomic_write import write_via_temp_path
from swimlanes.timeline.timeline import Timeline
from swimlanes.ui.gantt.bars import (
    BarStyle,
    draw_bars,
    group_bars,
    legend_entries,
    op_label_getter,
)
from swimlanes.ui.gantt.device_items import draw_connectors
from swimlanes.ui.gantt.occupancy import draw_occupancy
from swimlanes.ui.gantt.rows import (
    ChartRows,
    build_rows,
    format_duration,
    nice_ticks,
    tick_label,
    time_unit,
)
from swimlanes.ui.gantt.side_by_side import measured_title, simulated_title, union_rows
from swimlanes.ui.style import CATEGORY_COLOUR

IMAGE_FORMATS = (".png", ".svg", ".pdf")
PNG_PIXEL_RATIO = 2.0
MIN_WIDTH, MAX_WIDTH = 400, 16000

BACKGROUND = QColor("#FFFFFF")
TEXT = QColor("#202020")
GRID = QColor(0, 0, 0, 40)
BAND = QColor(0, 0, 0, 12)

MARGIN = 16.0
ROW_H = 26.0
AXIS_H = 36.0
TITLE_H = 30.0
CAPTION_H = 22.0
LEGEND_H = 24.0
SUBTITLE_H = 24.0
CHART_GAP = 14.0


def ensure_gui_app() -> QCoreApplication:
    """The application instance for painting; offscreen when there is no display.

    A QApplication (not a bare QGuiApplication), so that a process which exports first and
    opens widgets later (the GUI, a test session) can still create them.
    """
    app = QCoreApplication.instance()
    if app is not None:
        return app
    no_display = not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if no_display and not os.environ.get("QT_QPA_PLATFORM"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication

    return QApplication(["swimlanes"])


@dataclass
class _Chart:
    title: str
    rows: ChartRows
    top: float = 0.0

    @property
    def height(self) -> float:
        return SUBTITLE_H + ROW_H * max(len(self.rows.keys), 1) + AXIS_H


class _Page:
    """Where everything goes on an image of a given width."""

    def __init__(
        self,
        simulated: Timeline | None,
        measured: Timeline | None,
        width: int,
        title: str,
        x_range_ns: tuple[int, int] | None,
        stream_info: dict[str, dict] | None = None,
        caption: str = "",
    ) -> None:
        self.width = float(width)
        self.title = title
        self.caption = caption
        self.font = QFont()
        self.font.setPixelSize(12)
        self.small = QFont(self.font)
        self.small.setPixelSize(11)
        self.bold = QFont(self.font)
        self.bold.setBold(True)
        self.big = QFont(self.font)
        self.big.setPixelSize(16)
        self.big.setBold(True)
        keys = union_rows(simulated, measured)
        self.charts: list[_Chart] = []
        if simulated is not None:
            self.charts.append(
                _Chart(simulated_title(simulated), build_rows(simulated, keys, stream_info))
            )
        if measured is not None:
            self.charts.append(
                _Chart(measured_title(measured), build_rows(measured, keys, stream_info))
            )
        fm = QFontMetricsF(self.font)
        titles = [t for c in self.charts for t in c.rows.titles] or ["Host"]
        self.label_w = max(fm.horizontalAdvance(t) for t in titles) + 20
        self.plot_left = MARGIN + self.label_w
        self.plot_right = self.width - MARGIN
        spans = [tl.makespan_ns for tl in (simulated, measured) if tl is not None]
        span = max(max(spans, default=0), 1000)
        if x_range_ns is not None and x_range_ns[1] > x_range_ns[0]:
            self.x_ns = (float(x_range_ns[0]), float(x_range_ns[1]))
        else:
            self.x_ns = (-span * 0.01, span * 1.01)
        self.legend = self._legend_entries(simulated, measured)
        y = MARGIN + (TITLE_H if title else 0.0) + (CAPTION_H if caption else 0.0)
        y += LEGEND_H if self.legend else 0.0
        for c in self.charts:
            c.top = y
            y += c.height + CHART_GAP
        self.height = y - CHART_GAP + MARGIN

    @staticmethod
    def _legend_entries(*timelines: Timeline | None) -> list[tuple[str, str]]:
        seen: dict[str, str] = {}
        for tl in timelines:
            for name, colour in legend_entries(tl):
                seen.setdefault(name, colour)
        return [(n, c) for n, c in CATEGORY_COLOUR.items() if n in seen]

    def x_map(self) -> tuple[float, float]:
        """Scale and offset from chart µs to page x."""
        lo, hi = self.x_ns[0] / 1000.0, self.x_ns[1] / 1000.0
        sx = (self.plot_right - self.plot_left) / (hi - lo)
        return sx, self.plot_left - lo * sx


def _draw_page(painter: QPainter, page: _Page) -> int:
    """Paint the whole image; returns the number of bar rectangles drawn."""
    painter.fillRect(QRectF(0, 0, page.width, page.height), BACKGROUND)
    y = MARGIN
    if page.title:
        painter.setFont(page.big)
        painter.setPen(TEXT)
        painter.drawText(
            QRectF(MARGIN, y, page.width - 2 * MARGIN, TITLE_H),
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
            page.title,
        )
        y += TITLE_H
    if page.caption:
        painter.setFont(page.font)
        painter.setPen(TEXT)
        painter.drawText(
            QRectF(MARGIN, y, page.width - 2 * MARGIN, CAPTION_H),
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
            QFontMetricsF(page.font).elidedText(
                page.caption, Qt.TextElideMode.ElideRight, page.width - 2 * MARGIN
            ),
        )
        y += CAPTION_H
    if page.legend:
        _draw_legend(painter, page, y)
    return sum(_draw_chart(painter, page, c) for c in page.charts)


def _draw_legend(painter: QPainter, page: _Page, y: float) -> None:
    painter.setFont(page.font)
    fm = QFontMetricsF(page.font)
    x = page.plot_left
    for name, colour in page.legend:
        c = QColor(colour)
        painter.setPen(QPen(c.darker(130), 1))
        painter.setBrush(c)
        painter.drawRect(QRectF(x, y + 6, 14, 11))
        painter.setPen(TEXT)
        painter.drawText(QPointF(x + 19, y + 6 + fm.ascent() - 1), name)
        x += 19 + fm.horizontalAdvance(name) + 16


def _draw_chart(painter: QPainter, page: _Page, chart: _Chart) -> int:
    rows = chart.rows
    n = max(len(rows.keys), 1)
    painter.setFont(page.bold)
    painter.setPen(TEXT)
    painter.drawText(
        QRectF(MARGIN, chart.top, page.width, SUBTITLE_H),
        Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
        chart.title,
    )
    top = chart.top + SUBTITLE_H
    plot = QRectF(page.plot_left, top, page.plot_right - page.plot_left, ROW_H * n)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(BAND)
    for r in range(1, n, 2):
        painter.drawRect(QRectF(plot.left(), top + r * ROW_H, plot.width(), ROW_H))
    painter.setFont(page.font)
    painter.setPen(TEXT)
    for r, text in enumerate(rows.titles):
        box = QRectF(MARGIN, top + r * ROW_H, page.label_w - 10, ROW_H)
        painter.drawText(box, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, text)
    _draw_time_axis(painter, page, plot)
    x_map, y_map = page.x_map(), (ROW_H, top)
    view = (page.x_ns[0] / 1000.0, page.x_ns[1] / 1000.0)
    painter.save()
    painter.setClipRect(plot)
    drawn = 0
    if rows.timeline is not None:
        style = BarStyle(labels=op_label_getter(rows.timeline), font=page.small)
        drawn = draw_bars(painter, group_bars(rows), view, x_map, y_map, n, style)
        draw_occupancy(painter, rows, view, x_map, y_map, QColor(CATEGORY_COLOUR["Kernel"]))
        connectors = rows.collectives
        if len(connectors):  # one collective across the devices' rows, as the chart joins it
            shown = connectors[(connectors[:, 1] >= view[0]) & (connectors[:, 0] <= view[1])]
            colour = QColor(CATEGORY_COLOUR["Collective"]).darker(130)
            draw_connectors(painter, shown, x_map, y_map, colour)
    painter.restore()
    painter.setPen(QPen(TEXT, 1))
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawLine(plot.bottomLeft(), plot.bottomRight())
    painter.drawLine(plot.topLeft(), plot.bottomLeft())
    return drawn


def _draw_time_axis(painter: QPainter, page: _Page, plot: QRectF) -> None:
    lo, hi = page.x_ns
    unit = time_unit(hi - lo)
    ticks = nice_ticks(lo, hi, approx=max(int(plot.width() / 110), 2))
    step = float(ticks[1] - ticks[0]) if len(ticks) > 1 else hi - lo
    sx, dx = page.x_map()
    fm = QFontMetricsF(page.font)
    painter.setFont(page.font)
    for t in ticks:
        x = t / 1000.0 * sx + dx
        painter.setPen(QPen(GRID, 1))
        painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
        painter.setPen(QPen(TEXT, 1))
        painter.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + 4))
        text = tick_label(t, unit, step)
        w = fm.horizontalAdvance(text)
        painter.drawText(QPointF(x - w / 2, plot.bottom() + 5 + fm.ascent()), text)
    label = f"time since start ({unit[1]})"
    w = fm.horizontalAdvance(label)
    painter.drawText(QPointF(plot.center().x() - w / 2, plot.bottom() + 8 + 2 * fm.height()), label)


def caption_line(pipeline_name: str, simulated: Timeline | None, measured: Timeline | None) -> str:
    """What an exported image says under its title: the pipeline, each device and makespan,
    and with a measurement the model's makespan error (model minus measurement)."""
    parts = [pipeline_name] if pipeline_name else []
    if simulated is not None:
        device = simulated.device or "an unknown device"
        parts.append(f"simulated on {device}: makespan {format_duration(simulated.makespan_ns)}")
    if measured is not None:
        device = measured.device or "an unknown device"
        parts.append(f"measured on {device}: makespan {format_duration(measured.makespan_ns)}")
    if simulated is not None and measured is not None and measured.makespan_ns > 0:
        error = (simulated.makespan_ns - measured.makespan_ns) / measured.makespan_ns
        parts.append(f"model error {100 * error:+.1f}%")
    return " · ".join(parts)


def export_image(
    path: str | os.PathLike[str],
    simulated: Timeline | None,
    measured: Timeline | None,
    *,
    width: int = 1600,
    title: str = "",
    x_range_ns: tuple[int, int] | None = None,
    stream_info: dict[str, dict] | None = None,
    caption: str | None = None,
    pipeline_name: str = "",
) -> Path:
    """Write the simulated chart, the measured chart, or both stacked, as PNG, SVG or PDF.

    Under the title goes ``caption``; by default :func:`caption_line` of ``pipeline_name``
    (unless the title says it already) and the timelines ("" leaves the caption out).
    ``x_range_ns`` limits the image to that time range (ns from each timeline's start).
    ``width`` is in logical pixels (PNGs get twice as many device pixels for high-DPI).
    ``stream_info`` (stream name -> kind, priority; see ``rows.stream_info_of``) labels rows.
    Raises ValueError for an unknown extension, no timeline or a silly width, and OSError when
    the file cannot be written whole; a file already at ``path`` is then left as it was.
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in IMAGE_FORMATS:
        raise ValueError(
            f"unsupported image format {suffix or '(none)'}: use {', '.join(IMAGE_FORMATS)}"
        )
    if simulated is None and measured is None:
        raise ValueError("nothing to draw: no simulated and no measured timeline")
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        raise ValueError(f"width {width} px is outside {MIN_WIDTH}..{MAX_WIDTH}")
    ensure_gui_app()
    if caption is None:  # the name once: not again under a title that already says it
        name = pipeline_name if pipeline_name != title else ""
        caption = caption_line(name, simulated, measured)
    page = _Page(simulated, measured, width, title, x_range_ns, stream_info, caption)
    write, check = _WRITERS[suffix]
    # Drawn into a temp file beside ``out`` and renamed onto it only once the file is known to
    # be whole: Qt's SVG and PDF writers report no I/O errors, and a failed export must not
    # destroy the previous image.
    write_via_temp_path(out, lambda tmp: write(tmp, page), check)
    return out


def _paint(device, page: _Page, what: str) -> None:  # noqa: ANN001 - any QPaintDevice
    painter = QPainter()
    if not painter.begin(device):
        raise OSError(errno.EIO, f"the {what} writer could not start (cannot open the file?)")
    try:
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        _draw_page(painter, page)
    finally:
        ended = painter.end()
    if not ended:
        raise OSError(errno.EIO, f"the {what} writer failed to finish the file")


def _write_png(out: Path, page: _Page) -> None:
    r = PNG_PIXEL_RATIO
    image = QImage(
        round(page.width * r), round(page.height * r), QImage.Format.Format_ARGB32_Premultiplied
    )
    if image.isNull():
        raise OSError(errno.ENOMEM, "not enough memory for an image this size")
    image.setDevicePixelRatio(r)
    image.fill(BACKGROUND)
    _paint(image, page, "PNG")
    if not image.save(str(out), "PNG"):
        raise OSError(errno.EIO, "the PNG writer failed (is the disk full?)")


def _write_svg(out: Path, page: _Page) -> None:
    from PySide6.QtSvg import QSvgGenerator

    gen = QSvgGenerator()
    gen.setFileName(str(out))
    size = QSize(round(page.width), round(page.height))
    gen.setSize(size)
    gen.setViewBox(QRect(0, 0, size.width(), size.height()))
    gen.setTitle(page.title or "Swimlanes timeline")
    gen.setDescription("Gantt chart exported by Swimlanes")
    _paint(gen, page, "SVG")
    del gen  # closes the file


def _write_pdf(out: Path, page: _Page) -> None:
    writer = QPdfWriter(str(out))
    writer.setResolution(72)  # one logical pixel is one point
    writer.setPageSize(
        QPageSize(QSizeF(page.width, page.height), QPageSize.Unit.Point, "Swimlanes")
    )
    writer.setPageMargins(QMarginsF(0, 0, 0, 0), QPageLayout.Unit.Point)
    writer.setTitle(page.title or "Swimlanes timeline")
    writer.setCreator("Swimlanes")
    _paint(writer, page, "PDF")
    del writer  # closes the file


def _ends(path: Path, head: bytes, tail: bytes, what: str, tail_window: int = 64) -> None:
    """Raise unless the file starts with ``head`` and its last bytes hold ``tail``: a writer
    that ran out of disk leaves a file cut short, and Qt's SVG and PDF writers do not say so."""
    with path.open("rb") as f:
        first = f.read(len(head))
        f.seek(max(path.stat().st_size - tail_window, 0))
        last = f.read()
    if first != head or tail not in last:
        raise OSError(errno.EIO, f"the {what} file came out incomplete (is the disk full?)")


_WRITERS: dict[str, tuple[Callable[[Path, _Page], None], Callable[[Path], None]]] = {
    ".png": (_write_png, lambda p: _ends(p, b"\x89PNG\r\n\x1a\n", b"IEND\xaeB`\x82", "PNG")),
    ".svg": (_write_svg, lambda p: _ends(p, b"<?xml", b"</svg>", "SVG")),
    ".pdf": (_write_pdf, lambda p: _ends(p, b"%PDF", b"%%EOF", "PDF", 1024)),
}
