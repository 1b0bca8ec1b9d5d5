"""The inspector: a validated form for the selected op, or for the selected stream.

Every committed change is one SetOpFields / SetStreamFields edit (consecutive changes of one
field merge into one undo step). A value that cannot be used is refused, and the reason is
shown in red under the field; the document does not change. The limits are the file format's
(``swimlanes.model.document``: MAX_BYTES, MAX_DURATION_US ...), so the editor never holds a
document that would not load again once saved.

The stream page is built, shown and committed by the StreamFields mixin (inspector_streams),
the device and host-thread rows by DeviceFields and ThreadFields, a captured op's measured host
times by HostTimeFields (inspector_host_times).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from swimlanes.model.document import (
    CUDA_CALLS,
    DEFAULT_STREAM,
    HOST_MEMORY_KINDS,
    MAX_BLOCKS,
    MAX_BYTES,
    MAX_DURATION_US,
    MAX_FLOPS,
    MAX_NAME_CHARS,
    MAX_THREADS_PER_BLOCK,
    Op,
    Stream,
)
from swimlanes.model.edits import Edit, SetOpFields
from swimlanes.model.op_defaults import async_changes, host_memory_changes, size_changes
from swimlanes.ui.document_controller import DocumentController
from swimlanes.ui.editor.collective_fields import (
    SetInstanceFields,
    collective_instance,
    shared_change,
)
from swimlanes.ui.editor.common import PALETTE_KINDS
from swimlanes.ui.editor.fields import Field, FieldError, line_edit, parse_number
from swimlanes.ui.editor.inspector_devices import DeviceFields
from swimlanes.ui.editor.inspector_fields import OPTIONAL_TIME, visible_rows
from swimlanes.ui.editor.inspector_host_times import HostTimeFields, preset_placeholder
from swimlanes.ui.editor.inspector_streams import StreamFields
from swimlanes.ui.editor.inspector_threads import ThreadFields
from swimlanes.ui.editor.inspector_title import InspectorTitle
from swimlanes.ui.icons import op_icon
from swimlanes.ui.style import OP_TITLE
from swimlanes.units import BYTE_UNITS, best_unit, format_bytes

#: Pause in typing after which a field commits (and the chart re-simulates).
LIVE_COMMIT_MS = 600
TIMING_MODES: tuple[tuple[str, str], ...] = (
    ("duration_us", "Duration when alone on the GPU"),
    ("block_us", "Time per thread block"),
    ("roofline", "FLOPs and bytes (roofline)"),
)
#: Largest value of each numeric op field, and how a refusal names it (the file format's).
LIMITS: dict[str, tuple[float, str]] = {
    "blocks": (MAX_BLOCKS, f"{MAX_BLOCKS} blocks (CUDA's grid limit)"),
    "threads": (MAX_THREADS_PER_BLOCK, f"{MAX_THREADS_PER_BLOCK} threads per block"),
    "time": (MAX_DURATION_US, f"{MAX_DURATION_US:g} us (1,000 s)"),
    "call_us": (MAX_DURATION_US, f"{MAX_DURATION_US:g} us (1,000 s)"),
    "copy_out_us": (MAX_DURATION_US, f"{MAX_DURATION_US:g} us (1,000 s)"),
    "flops": (MAX_FLOPS, f"{MAX_FLOPS:g} FLOPs"),
    "bytes": (MAX_BYTES, format_bytes(MAX_BYTES)),
}
#: The placeholder of an empty duration override when the preset's figure is not known.
DEVICE_TIME_PLACEHOLDER = "empty: from the device's bandwidth"


class Inspector(StreamFields, DeviceFields, ThreadFields, HostTimeFields, QWidget):
    """Edit the selected op's fields, or the selected stream's kind and priority."""

    def __init__(self, controller: DocumentController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self._loading = False
        self._last_error = ""
        self._live_timers: list[QTimer] = []
        self._live_source: QLineEdit | None = None
        self.preset_source = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.title = InspectorTitle()  # (a captured kernel's long name must not widen it)
        layout.addWidget(self.title)
        self.call = QLabel()
        self.call.setWordWrap(True)
        self.call.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.call.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.call)
        self.pages = QStackedWidget()
        self.empty_page = QLabel("Select an op or a lane header to edit it.")
        self.empty_page.setWordWrap(True)
        self.empty_page.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.pages.addWidget(self.empty_page)
        self.pages.addWidget(self._build_op_page())
        self.pages.addWidget(self._build_stream_page())
        layout.addWidget(self.pages)
        layout.addStretch(1)
        controller.error.connect(self._remember_error)
        controller.changed.connect(self.refresh)
        controller.selection_changed.connect(self.refresh)
        self.refresh()

    # -- building -------------------------------------------------------------------------
    def _build_op_page(self) -> QWidget:
        page = QWidget()
        self.op_form = form = QFormLayout(page)
        form.setContentsMargins(0, 0, 0, 0)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.kind = QComboBox()
        for kind in PALETTE_KINDS:
            self.kind.addItem(op_icon(kind), OP_TITLE[kind], kind)
        self.label = line_edit("none: named after the kind")
        self.label.setMaxLength(MAX_NAME_CHARS)
        self.stream = QComboBox()
        self.event = QComboBox()
        self.event.setEditable(True)
        self.event.lineEdit().setMaxLength(MAX_NAME_CHARS)
        self.size = line_edit("size")
        self.unit = QComboBox()
        for name, _ in BYTE_UNITS:
            self.unit.addItem(name)
        self.host_memory = QComboBox()
        self.host_memory.addItems(list(HOST_MEMORY_KINDS))
        self.is_async = QCheckBox("asynchronous (…Async call)")
        self.blocks = line_edit("thread blocks in the grid")
        self.threads = line_edit(f"1 to {MAX_THREADS_PER_BLOCK}")
        self.timing = QComboBox()
        for key, title in TIMING_MODES:
            self.timing.addItem(title, key)
        self.time = line_edit("microseconds")
        self.flops = line_edit("floating-point operations")
        self.fields: dict[str, Field] = {}
        rows = [
            ("op", "Kind", Field(self.kind)),
            ("label", "Label", Field(self.label)),
            ("stream", "Stream", Field(self.stream)),
            ("event", "Event", Field(self.event)),
            ("blocks", "Blocks", Field(self.blocks)),
            ("threads", "Threads/block", Field(self.threads)),
            ("timing", "Timing", Field(self.timing)),
            ("time", "Duration (us)", Field(self.time)),
            ("flops", "FLOPs", Field(self.flops)),
            ("bytes", "Size", Field(self.size, self.unit)),
            ("host_memory", "Host memory", Field(self.host_memory)),
            ("is_async", "Mode", Field(self.is_async)),
            *self._build_host_time_rows(),
            *self._build_device_rows(),
            *self._build_thread_rows(),
        ]
        for key, title, fld in rows:
            self.fields[key] = fld
            form.addRow(title, fld)
        self._connect_op_page()
        return page

    def _connect_op_page(self) -> None:
        self.kind.activated.connect(lambda _i: self._commit_kind())
        self._on_commit(self.label, self._commit_label)
        self.stream.activated.connect(lambda _i: self._commit_stream())
        self.event.lineEdit().editingFinished.connect(self._commit_event)
        self.event.activated.connect(lambda _i: self._commit_event())
        self._on_commit(self.size, self._commit_size)
        self.unit.activated.connect(lambda _i: self._commit_size())
        self.host_memory.activated.connect(lambda _i: self._commit_host_memory())
        self.is_async.clicked.connect(self._commit_async)
        self._on_commit(self.blocks, lambda: self._commit_int("blocks", self.blocks))
        self._on_commit(self.threads, lambda: self._commit_int("threads", self.threads))
        self.timing.activated.connect(lambda _i: self._commit_timing_mode())
        self._on_commit(self.time, self._commit_time)
        self._on_commit(self.flops, self._commit_flops)
        self._connect_host_time_rows()

    # -- showing the selection ------------------------------------------------------------
    def current_op(self) -> Op | None:
        ops = self.controller.selected_ops()
        return ops[0] if len(ops) == 1 else None

    def current_stream(self) -> Stream | None:
        name = self.controller.selected_stream()
        return self.controller.pipeline.stream(name) if name else None

    def refresh(self) -> None:
        """Show the selection's current values (clears shown errors)."""
        self._loading = True
        if self._live_source is None:
            for timer in self._live_timers:  # typing in a field of what is no longer shown
                timer.stop()
        try:
            for fld in [*self.fields.values(), *self.stream_fields.values()]:
                fld.clear_error()
            op, stream = self.current_op(), self.current_stream()
            count = len(self.controller.selection())
            if op is not None:
                self._show_op(op)
            elif stream is not None:
                self._show_stream(stream)
            else:
                self.pages.setCurrentIndex(0)
                # no "Inspector" heading of its own: the dock's title already says it
                self.title.setText(f"{count} ops selected" if count else "")
                self.call.setText("")
                self.empty_page.setText(
                    "Drag them together on the lanes, or select one to edit its fields."
                    if count
                    else "Select an op or a lane header to edit it."
                )
        finally:
            self._loading = False
        self.title.setVisible(bool(self.title.text()))
        self.call.setVisible(bool(self.call.text()))

    def _show_op(self, op: Op) -> None:
        pipeline = self.controller.pipeline
        self.pages.setCurrentIndex(1)
        index = pipeline.op_index(op.uid)
        self.title.setText(f"#{index} {op.display_label}")
        self.call.setText(CUDA_CALLS[op.op])
        kind = op.op
        self.kind.setCurrentIndex(PALETTE_KINDS.index(kind))
        self._set_text(self.label, op.label or "")
        self.stream.clear()
        self.stream.addItems([s.name for s in pipeline.all_streams])
        self.stream.setCurrentText(op.stream_name or DEFAULT_STREAM)
        self.event.clear()
        self.event.addItems(pipeline.events())
        self.event.setCurrentText(op.event or "")
        mode = _timing_mode(op)
        if op.bytes is not None:
            value, unit = best_unit(op.bytes)
            if self._live_source is not self.size:  # keep the unit the user is typing in
                self.size.setText(f"{value:.6g}")
                self.unit.setCurrentText(unit)
        else:
            self.size.clear()
        self.host_memory.setCurrentText(op.effective_host_memory)
        self.is_async.setChecked(op.effective_async)
        self._set_text(self.blocks, str(op.blocks or ""))
        self._set_text(self.threads, str(op.threads or ""))
        self.timing.setCurrentIndex([k for k, _ in TIMING_MODES].index(mode))
        time_value = op.block_us if mode == "block_us" else op.duration_us
        self._set_text(self.time, "" if time_value is None else f"{time_value:g}")
        self._set_text(self.flops, "" if op.flops is None else f"{op.flops:g}")
        preset = self.preset_times(op)
        self._show_host_times(op, preset)
        self._show_device_fields(op, pipeline)
        self._show_op_thread(op, pipeline)
        threads = bool(pipeline.host_threads)
        pageable = op.effective_host_memory == "pageable"
        self._show_rows(kind, mode, pipeline.is_multi_device, threads, pageable=pageable)
        if kind in OPTIONAL_TIME:
            name, figures = preset
            self.time.setPlaceholderText(
                preset_placeholder(figures.get("duration_us"), name, DEVICE_TIME_PLACEHOLDER)
            )

    def _show_rows(
        self,
        kind: str,
        mode: str,
        multi_device: bool = False,
        threads: bool = False,
        *,
        pageable: bool = False,
    ) -> None:
        """Show the rows that the op kind (and a kernel's timing mode) uses, titled for it."""
        optional = kind in OPTIONAL_TIME
        kernel = kind == "kernel"
        time_title = {
            "kernel": "Block time (us)" if mode == "block_us" else "Duration (us)",
            "host": "Duration (us)",
            "host_func": "Duration (us)",
        }.get(kind, "Duration override (us)")
        self.op_form.labelForField(self.fields["time"]).setText(time_title)
        self.op_form.labelForField(self.fields["bytes"]).setText(
            "Bytes moved" if kernel else "Size"
        )
        self.time.setPlaceholderText(DEVICE_TIME_PLACEHOLDER if optional else "microseconds")
        visible = visible_rows(kind, mode, multi_device, threads, pageable=pageable)
        for key, fld in self.fields.items():
            self.op_form.setRowVisible(fld, key in ("op", "label") or key in visible)

    # -- committing -----------------------------------------------------------------------
    def _on_commit(self, editor: QLineEdit, commit: Callable[[], None]) -> None:
        """Commit on Enter or focus-out, and also after a pause in typing, so that the chart
        follows the value being typed; consecutive commits of one field merge into one step."""
        timer = QTimer(self)
        timer.setSingleShot(True)
        timer.setInterval(LIVE_COMMIT_MS)
        self._live_timers.append(timer)

        def live() -> None:
            self._live_source = editor
            try:
                commit()
            finally:
                self._live_source = None

        timer.timeout.connect(live)
        editor.textEdited.connect(lambda _text: timer.start())
        editor.editingFinished.connect(lambda: (timer.stop(), commit()))

    def _set_text(self, editor: QLineEdit, text: str) -> None:
        if editor is not self._live_source:  # never rewrite what the user is typing
            editor.setText(text)

    def _remember_error(self, message: str) -> None:
        self._last_error = message

    def _push(self, fld: Field, edit: Edit) -> bool:
        self._last_error = ""
        if self.controller.push(edit):
            return True
        fld.show_error(self._last_error or "refused")
        return False

    def _set(self, key: str, changes: dict, fld: Field | None = None) -> bool:
        """Commit ``changes`` to the selected op, showing a refusal at ``key``'s field."""
        op = self.current_op()
        if self._loading or op is None:
            return False
        fld = fld or self.fields[key]
        if all(getattr(op, k) == v for k, v in changes.items()):
            fld.clear_error()
            return True
        if shared_change(op, changes):
            # every member's op of the collective changes alike (NCCL needs the same calls)
            members = collective_instance(self.controller.pipeline, op)
            if len(members) > 1:
                uids = [m.uid for m in members]
                return self._push(fld, SetInstanceFields(uids, changes, op.display_label))
        return self._push(fld, SetOpFields(op.uid, changes))

    def _parsed(self, key: str, parse: Callable[[], object]) -> object | None:
        try:
            return parse()
        except FieldError as err:
            self.fields[key].show_error(str(err))
            return None

    def _commit_host_memory(self) -> None:
        op = self.current_op()
        if op is not None:  # one edit: a copy's time was measured with its old memory
            self._set("host_memory", host_memory_changes(op, self.host_memory.currentText()))

    def _commit_async(self, checked: bool) -> None:
        op = self.current_op()
        if op is not None:  # one edit: a staging call's measured time covered its staging
            self._set("is_async", async_changes(op, bool(checked)))

    def _commit_kind(self) -> None:
        self._set("op", {"op": self.kind.currentData()})

    def _commit_label(self) -> None:
        self._set("label", {"label": self.label.text().strip() or None})

    def _commit_stream(self) -> None:
        name = self.stream.currentText()
        self._set("stream", {"stream": None if name == DEFAULT_STREAM else name})

    def _commit_event(self) -> None:
        name = self.event.currentText().strip()
        if not name:
            self.fields["event"].show_error("an event op needs an event name")
            return
        self._set("event", {"event": name})

    def _commit_size(self) -> None:
        op = self.current_op()
        if self._loading or op is None:
            return
        unit = dict(BYTE_UNITS)[self.unit.currentText()]
        value = self._parsed("bytes", lambda: parse_number(self.size.text()))
        if value is None:
            return
        exact = float(value) * unit
        if self._over("bytes", exact):
            return
        size = round(exact)
        if size < 1:
            self.fields["bytes"].show_error("must be at least 1 byte")
            return
        self._set("bytes", size_changes(op, size))

    def _over(self, key: str, value: float) -> bool:
        """Whether ``value`` is past the file format's limit for ``key`` (shown if so)."""
        maximum, text = LIMITS[key]
        if value <= maximum:
            return False
        self.fields[key].show_error(f"must be at most {text}")
        return True

    def _block_time_over(self, key: str, blocks: int | None, block_us: float | None) -> bool:
        """A kernel's blocks times its block time past MAX_DURATION_US (shown at ``key``)."""
        if blocks is None or block_us is None or blocks * block_us <= MAX_DURATION_US:
            return False
        self.fields[key].show_error(
            f"{blocks} blocks of {block_us:g} us make {blocks * block_us:.4g} us of block time: "
            f"at most {MAX_DURATION_US:g} us in one kernel"
        )
        return True

    def _commit_int(self, key: str, editor: QLineEdit) -> None:
        value = self._parsed(key, lambda: parse_number(editor.text(), integer=True))
        if value is None or self._over(key, value):
            return
        op = self.current_op()
        if key == "blocks" and op is not None and self._block_time_over(key, value, op.block_us):
            return
        self._set(key, {key: value})

    def _commit_timing_mode(self) -> None:
        op = self.current_op()
        if self._loading or op is None or op.op != "kernel":
            return
        mode = self.timing.currentData()
        if mode == _timing_mode(op):
            return
        current = op.duration_us or op.block_us or 100.0
        changes: dict = {"duration_us": None, "block_us": None, "flops": None, "bytes": None}
        if mode == "roofline":
            changes.update(flops=1e9, bytes=64 * 1024 * 1024)
        else:
            changes[mode] = current
        self._set("timing", changes)

    def _commit_time(self) -> None:
        op = self.current_op()
        if self._loading or op is None:
            return
        optional = op.op in OPTIONAL_TIME
        if optional and not self.time.text().strip():
            self._set("time", {"duration_us": None})
            return
        strict = op.op != "host"
        value = self._parsed("time", lambda: parse_number(self.time.text(), strict=strict))
        if value is None or self._over("time", value):
            return
        key = "block_us" if op.op == "kernel" and _timing_mode(op) == "block_us" else "duration_us"
        if key == "block_us" and self._block_time_over("time", op.blocks, float(value)):
            return
        self._set("time", {key: float(value)})

    def _commit_flops(self) -> None:
        value = self._parsed("flops", lambda: parse_number(self.flops.text()))
        if value is not None and not self._over("flops", value):
            self._set("flops", {"flops": float(value)})


def _timing_mode(op: Op) -> str:
    if op.block_us is not None:
        return "block_us"
    if (
        op.op == "kernel"
        and op.duration_us is None
        and (op.flops is not None or op.bytes is not None)
    ):
        return "roofline"
    return "duration_us"
