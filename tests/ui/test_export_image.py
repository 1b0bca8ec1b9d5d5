"""Exported images: PNG at high DPI with the chart in it, SVG with a rect per op, PDF pages."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtGui import QColor, QImage
from test_gantt_chart import US, small_timeline
from test_gantt_side_by_side import measured_timeline

from swimlanes.ui import export_image as export_image_module
from swimlanes.ui.export_image import export_image
from swimlanes.ui.gantt.synthetic import synthetic_timeline
from swimlanes.ui.style import op_colour

SVG = "{http://www.w3.org/2000/svg}"


def _rects_by_fill(path) -> dict[str, int]:
    """How many <rect> elements each fill colour has (fill is set on the enclosing group)."""
    counts: dict[str, int] = {}

    def walk(node: ET.Element, fill: str) -> None:
        fill = node.get("fill", fill)
        if node.tag == f"{SVG}rect":
            counts[fill.lower()] = counts.get(fill.lower(), 0) + 1
        for child in node:
            walk(child, fill)

    walk(ET.parse(path).getroot(), "none")
    return counts


def test_png_has_the_chosen_width_at_double_density_and_shows_the_bars(qapp, tmp_path) -> None:
    out = export_image(tmp_path / "chart.png", small_timeline(), None, width=1200, title="small")
    image = QImage(str(out))
    assert not image.isNull()
    assert image.width() == 2400
    kernel, h2d = op_colour("kernel").rgb(), op_colour("h2d").rgb()
    seen = {
        image.pixel(x, y) for x in range(0, image.width(), 3) for y in range(0, image.height(), 3)
    }
    assert kernel in seen and h2d in seen
    assert len(seen) > 10  # text, grid, bands: not a blank canvas


def test_both_charts_stack_into_a_taller_image(qapp, tmp_path) -> None:
    one = QImage(str(export_image(tmp_path / "a.png", small_timeline(), None, width=800)))
    two = QImage(
        str(export_image(tmp_path / "b.png", small_timeline(), measured_timeline(), width=800))
    )
    assert two.width() == one.width() and two.height() > 1.8 * one.height()


def test_svg_parses_and_has_a_rect_per_visible_op(qapp, tmp_path) -> None:
    tl = small_timeline()
    out = export_image(tmp_path / "chart.svg", tl, None, width=1200)
    fills = _rects_by_fill(out)
    kernel = op_colour("kernel").name().lower()
    h2d = op_colour("h2d").name().lower()
    # kernels: one rect each on their stream row, one per host call, and the legend swatch
    assert fills[kernel] == 2 + 2 + 1
    # copies in: stream row, H2D engine row, the host call; and the legend swatch
    assert fills[h2d] == 2 * 3 + 1
    # a narrower range culls what is outside it
    out = export_image(tmp_path / "zoom.svg", tl, None, width=1200, x_range_ns=(150 * US, 300 * US))
    zoomed = _rects_by_fill(out)
    assert zoomed[h2d] == 1 and zoomed[kernel] == 2 + 1  # legend swatches stay


def test_svg_of_a_large_timeline_stays_small(qapp, tmp_path) -> None:
    tl = synthetic_timeline(30_000, labels=False)
    out = export_image(tmp_path / "big.svg", tl, None, width=1600)
    assert out.stat().st_size < 1_500_000
    ET.parse(out)


def test_pdf_has_a_page(qapp, tmp_path) -> None:
    out = export_image(tmp_path / "chart.pdf", small_timeline(), measured_timeline(), width=1000)
    data = out.read_bytes()
    assert data.startswith(b"%PDF")
    assert b"/Type /Page" in data or b"/Type/Page" in data


def test_bad_requests_are_refused_with_a_reason(qapp, tmp_path) -> None:
    with pytest.raises(ValueError, match="unsupported image format .bmp"):
        export_image(tmp_path / "x.bmp", small_timeline(), None)
    with pytest.raises(ValueError, match="nothing to draw"):
        export_image(tmp_path / "x.png", None, None)
    with pytest.raises(ValueError, match="width"):
        export_image(tmp_path / "x.png", small_timeline(), None, width=5)


def test_colours_match_the_chart_palette(qapp, tmp_path) -> None:
    out = export_image(tmp_path / "c.png", small_timeline(), None, width=600)
    image = QImage(str(out))
    arr = np.array(
        [
            [image.pixel(x, y) for x in range(0, image.width(), 4)]
            for y in range(0, image.height(), 4)
        ]
    )
    assert (arr == QColor(op_colour("d2h")).rgb()).any()


def _cut_short(write):  # noqa: ANN001, ANN202 - wraps one of export_image's writers
    """The writer, then what a disk that filled up part-way leaves: the first half of it."""

    def write_then_lose_the_rest(path, page) -> None:  # noqa: ANN001
        write(path, page)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])

    return write_then_lose_the_rest


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_an_image_cut_short_is_an_error_and_the_previous_image_stays(
    qapp, tmp_path, monkeypatch, suffix
) -> None:
    out = tmp_path / f"chart{suffix}"
    export_image(out, small_timeline(), None, width=800)
    before = out.read_bytes()
    write, check = export_image_module._WRITERS[suffix]
    monkeypatch.setitem(export_image_module._WRITERS, suffix, (_cut_short(write), check))
    with pytest.raises(OSError, match="incomplete"):
        export_image(out, small_timeline(), measured_timeline(), width=800)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temp file left


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_a_writer_that_cannot_open_its_file_is_an_error(qapp, tmp_path, suffix) -> None:
    # Qt's SVG and PDF writers only print a warning when they cannot open the file.
    write, _check = export_image_module._WRITERS[suffix]
    page = export_image_module._Page(small_timeline(), None, 800, "", None)
    with pytest.raises(OSError, match="writer"):
        write(tmp_path / "missing" / f"chart{suffix}", page)


def test_an_export_onto_a_folder_or_under_a_file_is_an_error(qapp, tmp_path) -> None:
    folder = tmp_path / "chart.svg"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        export_image(folder, small_timeline(), None)
    a_file = tmp_path / "notes"
    a_file.write_text("x")
    with pytest.raises(NotADirectoryError):
        export_image(a_file / "chart.png", small_timeline(), None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chart.svg", "notes"]
    assert list(folder.iterdir()) == []


def test_a_failed_export_from_the_app_says_why_and_keeps_the_file(
    qtbot, tmp_path, monkeypatch
) -> None:
    import errno
    import os

    from test_main_window import make_window

    from swimlanes.ui import dialogs
    from swimlanes.ui.app import open_initial

    window = make_window(qtbot, tmp_path)
    open_initial(window, None)
    errors: list[str] = []
    monkeypatch.setattr(dialogs, "show_error", lambda parent, title, text: errors.append(text))
    chart, table = tmp_path / "chart.svg", tmp_path / "ops.csv"
    for path in (chart, table):
        path.write_bytes(b"the previous export")
    monkeypatch.setattr(dialogs, "save_file", lambda *a: str(chart))
    write, check = export_image_module._WRITERS[".svg"]
    monkeypatch.setitem(export_image_module._WRITERS, ".svg", (_cut_short(write), check))
    assert not window.export_image()
    monkeypatch.setattr(dialogs, "save_file", lambda *a: str(table))

    def disk_full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    assert not window.export_csv()
    assert errors == [
        f"{chart}: the SVG file came out incomplete (is the disk full?)\n\nNothing was written.",
        f"{table}: No space left on device\n\nNothing was written.",
    ]
    assert chart.read_bytes() == table.read_bytes() == b"the previous export"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
