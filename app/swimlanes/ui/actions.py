"""The main window's actions, menus and toolbar (built here; their slots live in MainWindow)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QIcon, QKeySequence, QUndoStack
from PySide6.QtWidgets import (
    QComboBox,
    QLabel,
    QMainWindow,
    QMenu,
    QSpinBox,
    QStyle,
    QToolBar,
)

SP = QStyle.StandardPixmap
Key = QKeySequence.StandardKey


@dataclass
class Actions:
    """Every QAction of the main window, by name."""

    new: QAction
    open: QAction
    open_measurement: QAction
    open_trace_as_pipeline: QAction
    diff_with: QAction
    save: QAction
    save_as: QAction
    save_measurement: QAction
    export_image: QAction
    export_image_visible: QAction
    export_trace: QAction
    export_csv: QAction
    export_code: QAction
    quit: QAction
    undo: QAction
    redo: QAction
    delete: QAction
    duplicate: QAction
    copy: QAction
    paste: QAction
    select_all: QAction
    devices: QAction
    simulate: QAction
    play: QAction
    fit_all: QAction
    overlay: QAction
    kernel_colours: QAction
    compare_layout: QAction
    run_gpu: QAction
    cancel_gpu: QAction
    about: QAction
    lesson: QAction
    guide: QAction
    shortcuts: QAction

    def all(self) -> list[QAction]:
        return [getattr(self, f.name) for f in fields(self)]


def _action(
    window: QMainWindow,
    text: str,
    tip: str,
    *,
    shortcut: QKeySequence | Key | str | None = None,
    icon: SP | str | None = None,
) -> QAction:
    action = QAction(text, window)
    action.setStatusTip(tip)
    action.setToolTip(tip)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    if isinstance(icon, str):
        action.setIcon(QIcon.fromTheme(icon))
    elif icon is not None:
        action.setIcon(window.style().standardIcon(icon))
    return action


def create_actions(window: QMainWindow, undo_stack: QUndoStack) -> Actions:
    """Create the actions (not yet connected); undo/redo follow ``undo_stack`` with their texts."""
    a = _action
    undo = undo_stack.createUndoAction(window, "&Undo")
    undo.setShortcut(QKeySequence(Key.Undo))
    undo.setIcon(window.style().standardIcon(SP.SP_ArrowBack))
    redo = undo_stack.createRedoAction(window, "&Redo")
    # Ctrl+Y as well as the platform's redo key (Ctrl+Shift+Z on Linux)
    redo_keys = QKeySequence.keyBindings(Key.Redo)
    redo.setShortcuts(redo_keys + [k for k in [QKeySequence("Ctrl+Y")] if k not in redo_keys])
    redo.setIcon(window.style().standardIcon(SP.SP_ArrowForward))
    play = a(
        window,
        "&Play",
        "Animate the simulated schedule unfolding",
        shortcut="Space",
        icon=SP.SP_MediaPlay,
    )
    play.setCheckable(True)
    overlay = a(
        window,
        "Simulated &outline on measured chart",
        "Draw each op's simulated span as an outline on the measured chart",
    )
    overlay.setCheckable(True)
    kernel_colours = a(
        window,
        "Colour &kernels by name",
        "Give each kernel name its own colour (greens, teals, purples), as profilers do",
    )
    kernel_colours.setCheckable(True)
    compare_layout = a(
        window,
        "&Compare layout",
        "Give the schedule most of the window, so the simulated and measured charts show whole",
        shortcut="Ctrl+Shift+C",
    )
    compare_layout.setCheckable(True)
    return Actions(
        new=a(window, "&New", "Start an empty pipeline", shortcut=Key.New, icon=SP.SP_FileIcon),
        open=a(
            window,
            "&Open...",
            "Open a pipeline file",
            shortcut=Key.Open,
            icon=SP.SP_DialogOpenButton,
        ),
        open_measurement=a(
            window,
            "Open &measurement...",
            "Open a measured run or a profiler trace to compare with the model",
            shortcut="Ctrl+M",
        ),
        open_trace_as_pipeline=a(
            window,
            "Open trace as &pipeline...",
            "Rebuild a profiler trace or measured run as an editable pipeline, shown beside its "
            "measurement",
        ),
        diff_with=a(
            window,
            "&Diff with another timeline...",
            "Show this schedule above another pipeline's, run's or trace's, with per-op deltas",
        ),
        save=a(
            window, "&Save", "Save the pipeline", shortcut=Key.Save, icon=SP.SP_DialogSaveButton
        ),
        save_as=a(window, "Save &As...", "Save the pipeline under a new name", shortcut=Key.SaveAs),
        save_measurement=a(
            window, "Save m&easurement...", "Save the measured run together with its pipeline"
        ),
        export_image=a(
            window,
            "&Image (whole chart)...",
            "Export the charts as PNG, SVG or PDF",
            shortcut="Ctrl+E",
        ),
        export_image_visible=a(
            window,
            "Image (&visible range)...",
            "Export the visible time range of the charts as PNG, SVG or PDF",
        ),
        export_trace=a(
            window,
            "&Perfetto trace...",
            "Export the simulated and measured timelines as a Chrome/Perfetto trace",
        ),
        export_csv=a(window, "&CSV table...", "Export the op table as CSV"),
        export_code=a(
            window,
            "Export &code...",
            "Save the pipeline as a runnable Numba CUDA Python script or CUDA C++ program",
            shortcut="Ctrl+Shift+E",
        ),
        quit=a(window, "&Quit", "Quit Swimlanes", shortcut=Key.Quit),
        undo=undo,
        redo=redo,
        delete=a(window, "&Delete", "Delete the selected ops", shortcut=Key.Delete),
        duplicate=a(window, "D&uplicate", "Duplicate the selected ops", shortcut="Ctrl+D"),
        copy=a(window, "&Copy", "Copy the selected ops", shortcut=Key.Copy),
        paste=a(window, "&Paste", "Paste ops after the selection", shortcut=Key.Paste),
        select_all=a(window, "Select &All", "Select every op", shortcut=Key.SelectAll),
        devices=a(
            window,
            "&Devices and communicators...",
            "Add, rename or remove the pipeline's GPUs and define the communicators its "
            "collectives run across",
        ),
        simulate=a(
            window,
            "&Simulate now",
            "Simulate the pipeline on the chosen device",
            shortcut="F5",
            icon=SP.SP_BrowserReload,
        ),
        play=play,
        fit_all=a(window, "&Fit all", "Show the whole schedule", shortcut="Ctrl+0"),
        overlay=overlay,
        kernel_colours=kernel_colours,
        compare_layout=compare_layout,
        run_gpu=a(
            window,
            "&Run on GPU",
            "Run the pipeline on this machine's GPU",
            shortcut="Ctrl+R",
            icon=SP.SP_ComputerIcon,
        ),
        cancel_gpu=a(
            window, "&Cancel GPU run", "Stop the GPU run", shortcut="Ctrl+.", icon=SP.SP_BrowserStop
        ),
        about=a(window, "&About Swimlanes", "About Swimlanes"),
        lesson=a(
            window,
            "&Lesson of this example",
            "What this example teaches",
            shortcut="Shift+F1",
        ),
        guide=a(
            window,
            "&User guide",
            "The user guide, offline: the editor, simulating, GPU runs, comparing, exporting",
            shortcut=Key.HelpContents,
            icon=SP.SP_DialogHelpButton,
        ),
        shortcuts=a(
            window,
            "&Keyboard shortcuts",
            "Every action that has a keyboard shortcut, and its keys",
            shortcut="Ctrl+/",
        ),
    )


@dataclass
class Menus:
    recent: QMenu
    examples: QMenu
    shipped_measurements: QMenu
    view: QMenu
    help: QMenu | None = None


def build_menus(window: QMainWindow, a: Actions) -> Menus:
    bar = window.menuBar()
    file = bar.addMenu("&File")
    file.addActions([a.new, a.open])
    recent = file.addMenu("Open &Recent")
    examples = file.addMenu("E&xamples")
    file.addSeparator()
    file.addActions([a.save, a.save_as])
    file.addSeparator()
    file.addAction(a.open_measurement)
    file.addAction(a.open_trace_as_pipeline)
    file.addAction(a.diff_with)
    shipped = file.addMenu("Shipped measurements")
    file.addAction(a.save_measurement)
    file.addSeparator()
    export = file.addMenu("&Export")
    export.addActions([a.export_image, a.export_image_visible, a.export_trace, a.export_csv])
    file.addAction(a.export_code)
    file.addSeparator()
    file.addAction(a.quit)

    edit = bar.addMenu("&Edit")
    edit.addActions([a.undo, a.redo])
    edit.addSeparator()
    edit.addActions([a.copy, a.paste, a.duplicate, a.delete])
    edit.addSeparator()
    edit.addAction(a.select_all)

    pipeline = bar.addMenu("&Pipeline")
    pipeline.addAction(a.devices)

    view = bar.addMenu("&View")
    view.addActions([a.fit_all, a.overlay, a.kernel_colours])
    view.addSeparator()
    view.addAction(a.compare_layout)
    view.addSeparator()

    sim = bar.addMenu("&Simulate")
    sim.addActions([a.simulate, a.play])

    gpu = bar.addMenu("&GPU")
    gpu.addActions([a.run_gpu, a.cancel_gpu])

    help_menu = bar.addMenu("&Help")
    help_menu.addActions([a.guide, a.shortcuts, a.lesson])
    help_menu.addSeparator()
    help_menu.addAction(a.about)
    return Menus(
        recent=recent, examples=examples, shipped_measurements=shipped, view=view, help=help_menu
    )


#: What the Repeat box does: the executors (gpu/executor.py, gpu/multi_timeline.py) keep one
#: real repetition, not per-op medians, which could mix repetitions into a schedule none ran.
REPEAT_TIP = (
    "Timed repetitions of a GPU run, after one untimed warm-up.\n"
    "The measured chart shows one whole repetition: the one whose device span\n"
    "(first op start to last op end on the GPU) is the median;\n"
    "for an even count, the shorter of the two middle ones."
)


@dataclass
class ToolBarWidgets:
    toolbar: QToolBar
    device: QComboBox
    repeat: QSpinBox


def build_toolbar(window: QMainWindow, a: Actions) -> ToolBarWidgets:
    tb = window.addToolBar("Main")
    tb.setObjectName("main_toolbar")
    tb.setMovable(False)
    tb.addActions([a.new, a.open, a.save])
    tb.addSeparator()
    tb.addActions([a.undo, a.redo])
    tb.addSeparator()
    tb.addWidget(QLabel(" Device: "))
    device = QComboBox(tb)
    device.setObjectName("device_combo")
    device.setMinimumContentsLength(8)
    device.setToolTip("Device preset the pipeline is simulated on")
    tb.addWidget(device)
    tb.addActions([a.simulate, a.play])
    tb.addSeparator()
    tb.addAction(a.run_gpu)
    tb.addWidget(QLabel(" Repeat: "))
    repeat = QSpinBox(tb)
    repeat.setObjectName("repeat_spin")
    repeat.setRange(1, 1000)
    repeat.setValue(5)
    repeat.setToolTip(REPEAT_TIP)
    tb.addWidget(repeat)
    tb.addAction(a.cancel_gpu)
    return ToolBarWidgets(toolbar=tb, device=device, repeat=repeat)


#: Item data of the combo's last entry, which asks for a preset JSON file.
CHOOSE_PRESET_FILE = "<choose preset file>"


def fill_device_combo(combo: QComboBox) -> None:
    """List the device presets (item data: the name) with their key figures as tooltips, and a
    last entry that asks for a preset file (as written by ``swimlanes calibrate``)."""
    from swimlanes.engine import get_preset, preset_names
    from swimlanes.engine.presets import multi_preset_names

    for name in preset_names():
        add_device_item(combo, name, name, get_preset)
    # the presets of several GPUs, for pipelines that name several devices
    multi = multi_preset_names()
    if multi:
        combo.insertSeparator(combo.count())
    for name in multi:
        add_device_item(combo, name, name, get_preset)
    combo.insertSeparator(combo.count())
    combo.addItem("Preset file...", CHOOSE_PRESET_FILE)
    combo.setItemData(
        combo.count() - 1,
        "Simulate on a device preset JSON file, such as one written by swimlanes calibrate",
        Qt.ItemDataRole.ToolTipRole,
    )


def add_device_item(combo: QComboBox, text: str, device: str, get_preset: Any) -> int:
    """Add a preset (``device``: name or JSON path) before the "Preset file..." entry."""
    from swimlanes.engine import preset_summary

    try:
        tip = preset_tooltip(preset_summary(get_preset(device)))
    except (ValueError, OSError) as err:
        tip = f"{text}: {err}"
    at = combo.findData(CHOOSE_PRESET_FILE)
    at = combo.count() if at < 0 else at - 1  # before the separator
    combo.insertItem(at, text, device)
    combo.setItemData(at, tip, Qt.ItemDataRole.ToolTipRole)
    return at


def preset_tooltip(summary: dict[str, Any]) -> str:
    """A preset's key figures (swimlanes.engine.preset_summary), one per line."""
    lines = [f"<b>{summary.get('name', '')}</b>"]
    if summary.get("description"):
        lines.append(str(summary["description"]))
    for key, value in summary.items():
        if key not in ("name", "description"):
            lines.append(f"{key.replace('_', ' ')}: {value}")
    return "<br>".join(lines)
