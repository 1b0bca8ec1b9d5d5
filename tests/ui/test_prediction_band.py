"""The prediction band in the window: computed in a worker after the simulation, drawn on the
simulated chart and summarised, never shown for a document or device it was not computed for."""

from __future__ import annotations

import pytest
from loading_helpers import open_measurement_now
from test_main_window import _edit, make_window

from swimlanes.resources import measurements_dir


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
