"""Regenerate every PNG in docs/images/ from the real app, headless.

    .venv/bin/python docs/scripts/make_screenshots.py            # all images
    .venv/bin/python docs/scripts/make_screenshots.py --only lesson-two-streams main-window

Two kinds of image:

* lesson images: each shipped example (and a few variants the tutorial asks the reader to try)
  simulated on its preset and drawn by ``swimlanes.ui.export_image.export_image``, the code
  behind ``swimlanes export`` and File > Export > Image;
* window shots: the real ``MainWindow`` at 1600 x 1000 with an example open, grabbed with
  ``QWidget.grab()``: the whole window, the editor, the schedule, the insights tab, and
  simulated vs measured side by side when a shipped measurement exists.

Qt always runs offscreen here, the window gets a private settings file and recovery file (the
user's layout and recent files never leak into a screenshot, nor are they changed), and GPU
runs are reported as unavailable so the shots look the same on every machine. Every image is
rewritten on each run; the script prints one line per image and fails loudly if a window shot
comes out blank or a dialog pops up.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before any Qt import: same pixels everywhere

DOCS = Path(__file__).resolve().parents[1]  # (the guide; these scripts are not shipped with it)
IMAGES = DOCS / "images"
WINDOW_SIZE = (1600, 1000)
#: Lesson images are drawn at this logical width; PNGs carry 2x pixels (1600 px wide).
LESSON_WIDTH = 800
#: Examples preferred for the side-by-side shot, when their shipped measurement exists.
SIDE_BY_SIDE_PREFERENCE = ("chunked-overlap", "swimming-in-streams", "two-streams")


# -- lesson images ------------------------------------------------------------------------------
@dataclass(frozen=True)
class LessonImage:
    """One exported chart: ``example`` simulated on ``device`` after ``change`` (if any)."""

    name: str
    example: str
    device: str | None = None  # None: the example's own preset
    change: Callable | None = None
    caption: str = ""
    x_range_us: tuple[float, float] | None = None  # zoom: this time range only


def _all_on_s1(pipeline) -> None:  # noqa: ANN001 - a Pipeline
    for op in pipeline.program:
        if op.stream == "s2":
            op.stream = "s1"


def _streams_non_blocking(pipeline) -> None:  # noqa: ANN001
    for stream in pipeline.streams:
        stream.kind = "non_blocking"


def _copies_pinned(pipeline) -> None:  # noqa: ANN001
    for op in pipeline.program:
        if op.op in ("h2d", "d2h"):
            op.host_memory = "pinned"


def _urgent_priority_zero(pipeline) -> None:  # noqa: ANN001
    for stream in pipeline.streams:
        stream.priority = 0


def _depth_first(pipeline) -> None:  # noqa: ANN001
    from swimlanes.analysis.insights import reorder_issue

    reorder_issue(pipeline, "depth")


def _fuse_kernels(pipeline) -> None:  # noqa: ANN001
    """400 kernels of 2 us become 4 kernels of 200 us (same work, 4 launches)."""
    kernels = [op for op in pipeline.program if op.op == "kernel"]
    others = [op for op in pipeline.program if op.op != "kernel"]
    total_us = sum(op.duration_us or 0.0 for op in kernels)
    fused = kernels[:4]
    for k, op in enumerate(fused):
        op.duration_us = total_us / len(fused)
        op.label = f"fused {k}"
    pipeline.program[:] = fused + others


LESSONS: tuple[LessonImage, ...] = (
    LessonImage("lesson-two-streams", "two-streams"),
    LessonImage("lesson-two-streams-serial", "two-streams", change=_all_on_s1,
                caption="all ops moved onto s1"),
    LessonImage("lesson-chunked-overlap", "chunked-overlap"),
    LessonImage("lesson-pageable-trap", "pageable-trap"),
    LessonImage("lesson-pageable-trap-pinned", "pageable-trap", change=_copies_pinned,
                caption="copies from pinned memory"),
    LessonImage("lesson-default-stream-trap", "default-stream-trap"),
    LessonImage("lesson-default-stream-trap-fixed", "default-stream-trap",
                change=_streams_non_blocking, caption="s1 and s2 non_blocking"),
    LessonImage("lesson-ping-pong", "ping-pong"),
    LessonImage("lesson-breadth-vs-depth", "breadth-vs-depth"),
    LessonImage("lesson-breadth-vs-depth-c2050", "breadth-vs-depth", device="c2050"),
    LessonImage("lesson-breadth-vs-depth-c2050-depth", "breadth-vs-depth", device="c2050",
                change=_depth_first, caption="reordered depth-first"),
    LessonImage("lesson-breadth-vs-depth-c1060", "breadth-vs-depth", device="c1060"),
    LessonImage("lesson-event-dependency", "event-dependency"),
    LessonImage("lesson-priority", "priority"),
    LessonImage("lesson-priority-equal", "priority", change=_urgent_priority_zero,
                caption="urgent stream at priority 0"),
    LessonImage("lesson-launch-bound", "launch-bound"),
    LessonImage("lesson-launch-bound-zoom", "launch-bound", caption="first 150 us",
                x_range_us=(0.0, 150.0)),
    LessonImage("lesson-launch-bound-fused", "launch-bound", change=_fuse_kernels,
                caption="fused into 4 kernels"),
    LessonImage("lesson-swimming-in-streams", "swimming-in-streams"),
    LessonImage("lesson-swimming-in-streams-sync", "swimming-in-streams-sync"),
    LessonImage("lesson-peer-copy-split", "peer-copy-split"),
    LessonImage("lesson-ddp-buckets-25mb", "ddp-buckets-25mb", caption="first 2 ms",
                x_range_us=(0.0, 2000.0)),
)  # fmt: skip


def lesson_timeline(spec: LessonImage):  # noqa: ANN201 - (Pipeline, device name, Timeline)
    """The pipeline of a lesson image after its change, its device, and its simulation."""
    from swimlanes.engine import get_preset, simulate
    from swimlanes.model.io import load_pipeline
    from swimlanes.resources import example_path

    pipeline = load_pipeline(example_path(spec.example))
    if spec.change is not None:
        spec.change(pipeline)
    device = spec.device or str(pipeline.extra.get("device") or "h200")
    return pipeline, device, simulate(pipeline, get_preset(device))


def make_lesson_image(spec: LessonImage, out_dir: Path) -> Path:
    from swimlanes.ui.export_image import export_image
    from swimlanes.ui.gantt.rows import stream_info_of

    pipeline, device, timeline = lesson_timeline(spec)
    title = f"{spec.example}{f' ({spec.caption})' if spec.caption else ''} on {device}"
    x_range = None
    if spec.x_range_us is not None:
        x_range = (round(spec.x_range_us[0] * 1000), round(spec.x_range_us[1] * 1000))
    return export_image(
        out_dir / f"{spec.name}.png",
        timeline,
        None,
        width=LESSON_WIDTH,
        title=title,
        x_range_ns=x_range,
        stream_info=stream_info_of(pipeline),
    )


# -- window shots -------------------------------------------------------------------------------
class Shooter:
    """A MainWindow with private settings, driven like a user would, grabbed to PNGs."""

    def __init__(self, out_dir: Path) -> None:
        from PySide6.QtCore import QSettings, QTimer

        from swimlanes.ui.app import create_application
        from swimlanes.ui.main_window import MainWindow
        from swimlanes.ui.settings import Settings

        self.app = create_application(["swimlanes"])
        self.out_dir = out_dir
        self._tmp = tempfile.TemporaryDirectory(prefix="swimlanes-docs-")
        tmp = Path(self._tmp.name)
        settings = Settings(QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat))
        self.window = MainWindow(settings, gpu_available=False, autosave_path=tmp / "recovery")
        self.window.resize(*WINDOW_SIZE)
        self.window.show()
        self.dialogs: list[str] = []
        # A modal dialog would hang a headless run: close it, remember it, fail at the end.
        self._guard = QTimer()
        self._guard.setInterval(100)
        self._guard.timeout.connect(self._close_dialogs)
        self._guard.start()

    def _close_dialogs(self) -> None:
        modal = self.app.activeModalWidget()
        if modal is not None:
            self.dialogs.append(modal.windowTitle() or type(modal).__name__)
            modal.close()

    def settle(self, seconds: float = 0.4) -> None:
        """Let the window simulate, lay out and paint."""
        end = time.monotonic() + seconds
        while time.monotonic() < end or self.window.sim_runner.is_busy():
            self.app.processEvents()
            time.sleep(0.01)
            if time.monotonic() > end + 20:
                raise RuntimeError("the simulation did not finish within 20 s")

    def open_example(self, name: str) -> None:
        w = self.window
        w.controller.undo_stack.setClean()  # never a "save changes?" prompt between shots
        if not w.open_example(name):
            raise RuntimeError(f"cannot open example {name}")
        self.settle()
        w.charts.fit_all()
        self.settle(0.2)

    def save(self, name: str, widget=None, rect=None) -> Path:  # noqa: ANN001 - Qt objects
        widget = widget or self.window
        pixmap = widget.grab(rect) if rect is not None else widget.grab()
        image = pixmap.toImage()
        if image.isNull() or _is_blank(image):
            raise RuntimeError(f"{name}: the grabbed image is blank")
        path = self.out_dir / f"{name}.png"
        if not image.save(str(path), "PNG"):
            raise OSError(f"cannot write {path}")
        return path

    def close(self) -> None:
        from PySide6.QtCore import QCoreApplication, QEvent

        self._guard.stop()
        self.window.controller.undo_stack.setClean()
        self.window.close()
        # Delete the window now: a caller that goes on (a test run) inherits no timers.
        self.window.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        self.app.processEvents()
        self._tmp.cleanup()


def _is_blank(image) -> bool:  # noqa: ANN001 - QImage
    """True when a sample grid of pixels holds a single colour."""
    first = image.pixel(0, 0)
    step_x, step_y = max(1, image.width() // 40), max(1, image.height() // 40)
    for y in range(0, image.height(), step_y):
        for x in range(0, image.width(), step_x):
            if image.pixel(x, y) != first:
                return False
    return True


def _select_label(shooter: Shooter, label: str) -> None:
    controller = shooter.window.controller
    uids = [op.uid for op in controller.pipeline.program if op.label == label]
    controller.set_selection(uids)
    shooter.settle(0.2)


def _shipped_measurement() -> tuple[str, Path] | None:
    from swimlanes.resources import example_names, measurements_dir

    names = example_names()
    ordered = [n for n in SIDE_BY_SIDE_PREFERENCE if n in names] + sorted(names)
    for name in ordered:
        found = sorted(measurements_dir().glob(f"{name}.*.json"))
        if found:
            return name, found[0]
    return None


def make_window_shots(out_dir: Path, wanted: Callable[[str], bool]) -> list[Path]:
    shooter = Shooter(out_dir)
    w = shooter.window
    written: list[Path] = []
    try:
        shooter.open_example("chunked-overlap")
        if wanted("main-window"):
            written.append(shooter.save("main-window"))
        if wanted("main-window-compare"):
            written.extend(_main_window_compare(shooter))
        if wanted("window-editor"):
            # The editor alone, as a user sees it with the Schedule dock closed: events and
            # their arrows, the host program and the inspector of a selected kernel.
            shooter.open_example("event-dependency")
            w.schedule_dock.hide()
            _select_label(shooter, "encoder 0")
            written.append(shooter.save("window-editor"))
            w.schedule_dock.show()
            w.controller.set_selection([])
        # From here on the shots are of the Schedule dock alone, at full height.
        if wanted("window-schedule"):
            shooter.open_example("chunked-overlap")
            _schedule_only(shooter)
            _split_schedule(w, 0.72)
            shooter.settle()
            written.append(shooter.save("window-schedule", w.schedule_dock))
        if wanted("window-insights"):
            shooter.open_example("default-stream-trap")
            w.bottom_tabs.setCurrentWidget(w.insights)
            _schedule_only(shooter)
            _split_schedule(w, 0.5)
            shooter.settle()
            written.append(shooter.save("window-insights", w.schedule_dock))
        if wanted("window-critical-path"):
            # The pageable trap's path: the host thread itself, through its pageable copies.
            shooter.open_example("pageable-trap")
            w.bottom_tabs.setCurrentWidget(w.critical)
            _schedule_only(shooter)
            _split_schedule(w, 0.5)
            shooter.settle()
            written.append(shooter.save("window-critical-path", w.schedule_dock))
            w.bottom_tabs.setCurrentWidget(w.insights)
        measurement = _shipped_measurement()
        if measurement is not None and wanted("window-side-by-side"):
            written.append(_side_by_side(shooter, *measurement))
        if measurement is not None and wanted("charts-search"):
            written.append(_charts_search(shooter, *measurement))
        if measurement is not None and wanted("charts-rows"):
            written.append(_charts_rows(shooter, *measurement))
        if wanted("charts-coverage"):
            written.extend(_charts_coverage(shooter))
        if wanted("help-guide") or wanted("shortcut-sheet"):
            written.extend(_help_shots(shooter, wanted))
    finally:
        shooter.close()
    if shooter.dialogs:
        raise RuntimeError(f"dialogs popped up while shooting: {shooter.dialogs}")
    return written


def _help_shots(shooter: Shooter, wanted: Callable[[str], bool]) -> list[Path]:
    """Help > User guide at the comparing page, and Help > Keyboard shortcuts."""
    from swimlanes.ui.help_viewer import open_guide, open_shortcuts

    w = shooter.window
    shots: list[Path] = []
    if wanted("help-guide"):
        guide = open_guide(w, "comparing.md")
        guide.resize(1100, 720)
        shooter.settle(0.3)
        shots.append(shooter.save("help-guide", guide))
        guide.close()
    if wanted("shortcut-sheet"):
        sheet = open_shortcuts(w)
        shooter.settle(0.2)
        shots.append(shooter.save("shortcut-sheet", sheet))
        sheet.close()
    return shots


def _schedule_only(shooter: Shooter) -> None:
    """The editor steps aside (as a user would close it) for a full-height Schedule dock."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget

    w = shooter.window
    w.centralWidget().hide()
    for name in ("palette_dock", "inspector_dock"):
        dock = w.findChild(QDockWidget, name)
        if dock is not None:
            dock.hide()
    w.resizeDocks([w.schedule_dock], [WINDOW_SIZE[1]], Qt.Orientation.Vertical)
    shooter.settle(0.2)


def _split_schedule(window, charts_share: float) -> None:  # noqa: ANN001 - MainWindow
    """Give the charts ``charts_share`` of the Schedule dock, the tabs below the rest."""
    from PySide6.QtWidgets import QSplitter

    splitter = window.findChild(QSplitter, "schedule_splitter")
    if splitter is not None:
        total = sum(splitter.sizes())
        top = round(total * charts_share)
        splitter.setSizes([top, total - top])


def _main_window_compare(shooter: Shooter) -> list[Path]:
    """The whole window as a user sees it after opening a shipped H200 measurement."""
    from swimlanes.resources import example_path
    from swimlanes.services.runs import shipped_measurement
    from swimlanes.timeline.formats.io import load_run

    run_path = shipped_measurement(example_path("default-stream-trap"))
    if run_path is None:
        return []
    w = shooter.window
    shooter.open_example("default-stream-trap")
    timeline, pipeline = load_run(run_path)
    w.set_measured(timeline, pipeline)  # switches to the measured GPU's preset and Compare layout
    shooter.settle()
    w.charts.fit_all()
    shooter.settle(0.2)
    shot = shooter.save("main-window-compare")
    w.set_measured(None)
    shooter.settle()
    return [shot]


def _side_by_side(shooter: Shooter, example: str, run_path: Path) -> Path:
    from swimlanes.services.devices import simulation_device
    from swimlanes.timeline.formats.io import load_run

    w = shooter.window
    shooter.open_example(example)
    timeline, pipeline = load_run(run_path)
    # Simulate on the measured GPU's preset, as `swimlanes compare` does.
    w.set_device(simulation_device(None, timeline))
    w.set_measured(timeline, pipeline)
    w.bottom_tabs.setCurrentWidget(w.table)
    # Two charts need room: most of a full-height Schedule dock for the charts.
    _schedule_only(shooter)
    _split_schedule(w, 0.78)
    shooter.settle()
    w.charts.fit_all()
    shooter.settle(0.2)
    return shooter.save("window-side-by-side", w.schedule_dock)


def _charts_search(shooter: Shooter, example: str, run_path: Path) -> Path:
    """Find over the side-by-side charts: one stream's ops, the first stepped to (selected
    and centred), the filter dimming the rest."""
    from swimlanes.timeline.formats.io import load_run

    w = shooter.window
    if w.measured is None:
        shooter.open_example(example)
        w.set_measured(*load_run(run_path))
        _schedule_only(shooter)
        _split_schedule(w, 0.78)
        shooter.settle()
    w.charts.fit_all()
    search = w.charts.search
    search.open()
    search.bar.field.setText("stream:s3")
    search.bar.flush()
    search.step(1)
    search.set_filter(True)
    shooter.settle(0.3)
    shot = shooter.save("charts-search", w.charts)
    search.close()
    w.controller.set_selection([])
    return shot


def _charts_rows(shooter: Shooter, example: str, run_path: Path) -> Path:
    """Rows like a profiler's: engines collapsed into one summary row, a stream pinned on top,
    kernels coloured by name, and the ruler's table of a 20 ms range."""
    from swimlanes.timeline.formats.io import load_run

    w = shooter.window
    if w.measured is None:
        shooter.open_example(example)
        w.set_measured(*load_run(run_path))
        _schedule_only(shooter)
        _split_schedule(w, 0.78)
        shooter.settle()
    w.charts.fit_all()
    chart = w.charts.simulated_chart
    chart.set_group_collapsed("engines", True)
    chart.pin_row("stream:s3")
    w.actions.kernel_colours.setChecked(True)
    chart.set_ruler_ns(10_000_000, 30_000_000)
    shooter.settle(0.3)
    shot = shooter.save("charts-rows", w.charts)
    chart.clear_ruler()
    chart.row_group_state().reset()
    w.actions.kernel_colours.setChecked(False)
    return shot


def _charts_coverage(shooter: Shooter) -> list[Path]:
    """A launch-bound run at overview: 400 tiny kernels shaded by the time they cover, so the
    stream row reads 11 % busy and the host row, launching them, nearly solid."""
    from swimlanes.resources import example_path
    from swimlanes.services.runs import shipped_measurement
    from swimlanes.timeline.formats.io import load_run

    run_path = shipped_measurement(example_path("launch-bound"))
    if run_path is None:
        return []
    w = shooter.window
    shooter.open_example("launch-bound")
    w.set_measured(*load_run(run_path))
    _schedule_only(shooter)
    _split_schedule(w, 0.78)
    shooter.settle()
    w.charts.fit_all()
    shooter.settle(0.2)
    return [shooter.save("charts-coverage", w.charts)]


#: Exported side-by-side images: name -> the example whose shipped H200 measurement it shows.
#: ``readme-side-by-side`` is the one README.md shows.
MEASURED_EXPORTS = {
    "export-side-by-side": "chunked-overlap",
    "readme-side-by-side": "default-stream-trap",
}


def make_measured_export(out_dir: Path, name: str) -> Path | None:
    """An exported side-by-side image (what ``swimlanes export --measured`` writes)."""
    from swimlanes.engine import get_preset, simulate
    from swimlanes.resources import example_path
    from swimlanes.services.devices import simulation_device
    from swimlanes.services.runs import shipped_measurement
    from swimlanes.timeline.formats.io import load_run
    from swimlanes.ui.export_image import export_image
    from swimlanes.ui.gantt.rows import stream_info_of

    example = MEASURED_EXPORTS[name]
    run_path = shipped_measurement(example_path(example))
    if run_path is None:
        return None
    measured, pipeline = load_run(run_path)
    if pipeline is None:
        return None
    device = simulation_device(None, measured)
    simulated = simulate(pipeline, get_preset(device))
    return export_image(
        out_dir / f"{name}.png",
        simulated,
        measured,
        width=LESSON_WIDTH,
        title=f"{example}: simulated on {device} vs measured on {measured.device or 'a GPU'}",
        stream_info=stream_info_of(pipeline),
    )


# -- main ---------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", nargs="*", metavar="NAME", help="image names (no .png)")
    parser.add_argument("--out", type=Path, default=IMAGES, help="output folder")
    args = parser.parse_args(argv)
    only = set(args.only or [])

    def wanted(name: str) -> bool:
        return not only or name in only

    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    from swimlanes.ui.app import create_application

    create_application(["swimlanes"])  # one QApplication for exports and window shots
    written: list[Path] = []
    for spec in LESSONS:
        if wanted(spec.name):
            written.append(make_lesson_image(spec, args.out))
    for name in MEASURED_EXPORTS:
        if wanted(name):
            path = make_measured_export(args.out, name)
            if path is not None:
                written.append(path)
    if any(wanted(n) for n in WINDOW_SHOTS):
        written.extend(make_window_shots(args.out, wanted))
    for path in written:
        print(f"wrote {os.path.relpath(path)}")
    if _shipped_measurement() is None:
        print("no shipped measurement in resources/measurements: side-by-side images skipped")
    print(f"{len(written)} images in {time.monotonic() - started:.1f} s")
    return 0


WINDOW_SHOTS = (
    "main-window",
    "main-window-compare",
    "window-editor",
    "window-schedule",
    "window-insights",
    "window-critical-path",
    "window-side-by-side",
    "charts-search",
    "charts-rows",
    "charts-coverage",
    "help-guide",
    "shortcut-sheet",
)

if __name__ == "__main__":
    sys.exit(main())
