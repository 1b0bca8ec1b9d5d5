"""Exported images carry a caption line: pipeline, devices, makespans, and the model error."""

from __future__ import annotations

from PySide6.QtGui import QImage

from swimlanes.engine import get_preset, simulate
from swimlanes.model import load_pipeline
from swimlanes.resources import example_path
from swimlanes.ui.export_image import CAPTION_H, PNG_PIXEL_RATIO, caption_line, export_image


def _two_runs():
    pipeline = load_pipeline(example_path("two-streams"))
    return pipeline, simulate(pipeline, get_preset("h200")), simulate(pipeline, get_preset("a100"))


def test_the_caption_names_pipeline_devices_makespans_and_error(qtbot) -> None:
    pipeline, sim, other = _two_runs()
    alone = caption_line(pipeline.name, sim, None)
    assert alone.startswith(f"{pipeline.name} · simulated on {sim.device}: makespan ")
    assert "model error" not in alone  # no measurement, no error
    both = caption_line(pipeline.name, sim, other)
    assert f"measured on {other.device}" in both
    error = 100 * (sim.makespan_ns - other.makespan_ns) / other.makespan_ns
    assert both.endswith(f"model error {error:+.1f}%")


def test_the_caption_is_drawn_under_the_title(qtbot, tmp_path) -> None:
    pipeline, sim, other = _two_runs()
    with_caption = export_image(
        tmp_path / "a.png", sim, other, title="x.json", pipeline_name=pipeline.name
    )
    without = export_image(tmp_path / "b.png", sim, other, title="x.json", caption="")
    a, b = QImage(str(with_caption)), QImage(str(without))
    assert a.height() - b.height() == round(CAPTION_H * PNG_PIXEL_RATIO)
    # the caption's line holds dark text pixels; without a caption that band is the legend's
    band_top = int((16 + 30) * PNG_PIXEL_RATIO)
    row = range(band_top, band_top + int(CAPTION_H * PNG_PIXEL_RATIO))
    dark = sum(
        1 for y in row for x in range(0, a.width(), 3) if a.pixelColor(x, y).lightness() < 100
    )
    assert dark > 50
