"""The prediction band in the window: computed in a worker after the simulation, drawn on the
simulated chart and summarised, never shown for a document or device it was not computed for."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from loading_helpers import open_measurement_now
from PySide6.QtCore import QRect, Qt
from test_main_window import _edit, make_window

from swimlanes.resources import measurements_dir
from swimlanes.ui.fitted_label import FittedLabel
from swimlanes.ui.prediction_band import band_forms, band_text


def _choose(window, device: str) -> None:
    combo = window.toolbar.device
    combo.setCurrentIndex(next(i for i in range(combo.count()) if combo.itemData(i) == device))


@pytest.fixture
def window(qtbot, tmp_path):
    win = make_window(qtbot, tmp_path)
    win.open_example("two-streams")  # on the ideal preset, whose schedule is exact: no band
    qtbot.waitUntil(lambda: "no run-to-run variation" in win.band.label.text(), timeout=20000)
    assert win.band.band is None and not win.band.item.is_shown()
    _choose(win, "h200")
    qtbot.waitUntil(lambda: win.band.band is not None, timeout=20000)
    return win


def test_the_band_follows_the_simulation_on_chart_and_in_the_summary(window) -> None:
    band, sim = window.band.band, window.simulated
    assert band.makespan_low <= sim.makespan_ns <= band.makespan_high
    assert window.band.item.is_shown()
    text = window.band.label.text()
    # The h200 preset carries the model-error term fitted on the fidelity benchmark.
    assert text.startswith("Makespan ") and "90% likely between" in text
    assert not window.band.label.isHidden()


def test_an_edit_removes_the_band_until_the_new_one_is_computed(qtbot, window) -> None:
    old = window.band.band
    _edit(window)  # a 50 us kernel on the default stream: a longer schedule
    # Nothing has been computed for the edited document yet: no band on screen.
    assert window.band.band is None and not window.band.item.is_shown()
    assert window.band.label.isHidden()
    qtbot.waitUntil(lambda: window.band.band is not None, timeout=20000)
    new = window.band.band
    assert new.makespan_p50 != old.makespan_p50
    assert new.makespan_low <= window.simulated.makespan_ns <= new.makespan_high


def test_another_device_or_a_failed_simulation_removes_the_band(qtbot, window) -> None:
    _choose(window, "a100")  # built in: generic run-to-run spread, no fitted model error
    assert window.band.band is None and not window.band.item.is_shown()
    qtbot.waitUntil(lambda: window.band.band is not None, timeout=20000)
    assert "80% of sampled runs between" in window.band.label.text()

    def failing(pipeline, device, **kwargs):
        raise ValueError("broken preset")

    window.sim_runner._simulate = failing
    _edit(window)
    assert window.band.band is None and window.band.label.isHidden()
    qtbot.wait(300)  # no band arrives for a document that did not simulate
    assert window.band.band is None and not window.band.item.is_shown()


def test_compare_view_says_whether_the_measurement_fell_inside(qtbot, window) -> None:
    open_measurement_now(qtbot, window, measurements_dir() / "two-streams.h200.json")
    qtbot.waitUntil(lambda: window.band.band is not None, timeout=20000)
    band, measured = window.band.band, window.measured
    verdict = "inside" if band.contains(measured.makespan_ns) else "outside"
    assert f": {verdict} the band" in window.band.label.text()


def _shown_fits(label) -> bool:
    """Whether the label's text, laid out as the label lays it out, fits inside it."""
    box = label.contentsRect()
    flags = int(Qt.TextFlag.TextWordWrap.value) if label.wordWrap() else 0
    needed = label.fontMetrics().boundingRect(QRect(0, 0, box.width(), 100000), flags, label.text())
    return needed.width() <= box.width() and needed.height() <= box.height()


def test_the_band_line_is_never_clipped_and_keeps_its_full_wording(qtbot, window) -> None:
    open_measurement_now(qtbot, window, measurements_dir() / "two-streams.h200.json")
    qtbot.waitUntil(lambda: window.band.band is not None, timeout=20000)
    label = window.band.label
    window.resize(1555, 874)  # the first-start size on a 1728x972 screen, side docks open
    window.show()
    qtbot.waitExposed(window)
    for width in (2400, 1555, 1100, 800):
        window.resize(width, 874)
        qtbot.wait(50)  # the layout settles
        assert label.isVisible() and label.width() > 0
        assert _shown_fits(label), f"clipped at {width}: {label.text()!r} in {label.size()}"
        text, tip = label.text(), label.toolTip()
        # Shortened or not, the line names the makespan, the band and the verdict ...
        assert "ms" in text and "90%" in text and "inside" in text
        # ... and the full sentence is always in the tooltip.
        assert tip.startswith("Makespan ") and "90% likely between" in tip
        assert ": inside the band" in tip and "simulations with the device preset" in tip
        if width == 2400:  # room for the full wording on the strip's lines
            assert text.startswith("Makespan ") and "90% likely between" in text
        if width == 800:
            assert text != label.full_text() and "likely between" not in text


def test_the_band_line_forms_go_from_full_to_compact() -> None:
    band = SimpleNamespace(
        makespan_low=900_000,
        makespan_high=1_250_000,
        level_pct=90,
        model_error=True,
        contains=lambda ns: ns <= 1_250_000,
    )
    measured = SimpleNamespace(makespan_ns=1_300_000)
    full, compact, tiny = band_forms(band, 1_050_000, measured)
    assert full == band_text(band, 1_050_000, measured)
    assert full.startswith("Makespan 1.05 ms, 90% likely between 900 µs and 1.25 ms")
    assert full.endswith("measured 1.3 ms: outside the band")
    assert compact == "Makespan 1.05 ms (90% likely 900 µs–1.25 ms)\nmeasured 1.3 ms: outside"
    assert tiny == "1.05 ms (90%: 900 µs–1.25 ms)\nmeasured outside"
    band.makespan_low, band.model_error = 1_000_000, False
    assert band_forms(band, 1_050_000)[1:] == [
        "Makespan 1.05 ms (90% of runs 1–1.25 ms)",  # one unit for both ends
        "1.05 ms (90%: 1–1.25 ms)",
    ]


def test_a_refusal_too_long_for_the_line_is_shortened_with_the_reason_in_its_tooltip(
    qtbot,
) -> None:
    label = FittedLabel()
    qtbot.addWidget(label)
    reason = "No prediction band: the ideal preset models no run-to-run variation"
    label.set_forms([reason, "No prediction band"], reflow_full=True)
    label.resize(140, label.fontMetrics().height() + 2)
    label.show()
    qtbot.waitExposed(label)
    assert label.text() == "No prediction band" and label.toolTip() == reason
    label.resize(label.fontMetrics().horizontalAdvance(reason) // 2 + 40, 200)
    qtbot.wait(10)
    assert label.text().replace("\n", " ") == reason and "\n" in label.text()
    assert _shown_fits(label)
    label.resize(60, label.fontMetrics().height() + 2)  # too narrow for any form: elided
    qtbot.wait(10)
    assert label.text().endswith("…") and _shown_fits(label)
