"""The inspector's host-thread fields: the thread that issues an op, and the thread a stream
belongs to (a mixin of :class:`~swimlanes.ui.editor.inspector.Inspector`).

Both show once the pipeline declares host threads. Each choice is one undoable edit of
:mod:`swimlanes.model.thread_edits`; one the rules refuse (another thread's per-thread default
stream, a thread of another device) is shown in red under the field, and the document stays as
it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QComboBox, QFormLayout

from swimlanes.model.document import DEFAULT_STREAM, Op, Pipeline, Stream
from swimlanes.model.edits import Edit, SetOpHostThread, SetStreamHostThread
from swimlanes.ui.editor.fields import Field

if TYPE_CHECKING:
    from swimlanes.ui.document_controller import DocumentController

OP_THREAD_TIP = (
    "The host thread that issues this call, in its own program order: a sync blocks only "
    "this thread. Add threads from a host lane's menu"
)
STREAM_THREAD_TIP = (
    "The host thread the stream belongs to: it issues the stream's calls unless a call names "
    "another. A per-thread default stream is its thread's own cudaStreamPerThread"
)


def _fill_threads(combo: QComboBox, default: str, names: list[str], current: str | None) -> None:
    """Offer ``default`` (shown as what it resolves to) and ``names``; show ``current``."""
    items = [(f"default ({default})", None), *((n, n) for n in names)]
    if [(combo.itemText(i), combo.itemData(i)) for i in range(combo.count())] != items:
        combo.clear()
        for text, data in items:
            combo.addItem(text, data)
    _show(combo, current)


def _show(combo: QComboBox, current: str | None) -> None:
    """Show ``current`` (None: the default item) again, as the document still has it."""
    combo.setCurrentIndex(
        next((i for i in range(combo.count()) if combo.itemData(i) == current), -1)
    )


def _threads_on(pipeline: Pipeline, device: str) -> list[str]:
    return [name for name, d in pipeline.thread_list() if d == device]


class ThreadFields:
    """Builds, shows and commits the host-thread rows; expects the Inspector's
    ``controller``, ``fields``, ``stream_fields``, ``_push``, ``current_op``,
    ``current_stream`` and ``_loading``."""

    controller: DocumentController
    fields: dict[str, Field]
    stream_fields: dict[str, Field]
    _loading: bool

    def _push(self, fld: Field, edit: Edit) -> bool:
        raise NotImplementedError

    def current_op(self) -> Op | None:
        raise NotImplementedError

    def current_stream(self) -> Stream | None:
        raise NotImplementedError

    @staticmethod
    def _thread_combo(tip: str) -> QComboBox:
        combo = QComboBox()
        combo.setToolTip(tip)
        # thread names can be long: they must not widen the inspector's dock
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(6)
        return combo

    # -- an op's thread -------------------------------------------------------------------
    def _build_thread_rows(self) -> list[tuple[str, str, Field]]:
        """The op form's host-thread row (added to it by the inspector)."""
        self.op_thread = self._thread_combo(OP_THREAD_TIP)
        self.op_thread.activated.connect(lambda _i: self._commit_op_thread())
        return [("host_thread", "Issued by", Field(self.op_thread))]

    def _show_op_thread(self, op: Op, pipeline: Pipeline) -> None:
        # the thread that issues the op when it names none (as Pipeline.op_thread resolves it)
        stream = op.stream_name
        if stream is not None:
            default_thread = pipeline.stream_thread(stream)
        else:
            default_thread = pipeline.device_thread(op.device or pipeline.device_names[0])
        names = _threads_on(pipeline, pipeline.op_device(op))
        _fill_threads(self.op_thread, default_thread, names, op.host_thread)

    def _commit_op_thread(self) -> None:
        op = self.current_op()
        thread = self.op_thread.currentData()
        if self._loading or op is None or thread == op.host_thread:
            return
        if not self._push(self.fields["host_thread"], SetOpHostThread([op.uid], thread)):
            _show(self.op_thread, op.host_thread)  # the refusal stays said under the field

    # -- a stream's thread ----------------------------------------------------------------
    def _build_stream_thread_row(self, form: QFormLayout) -> None:
        self.stream_thread = self._thread_combo(STREAM_THREAD_TIP)
        self.stream_fields["host_thread"] = Field(self.stream_thread)
        form.addRow("Host thread", self.stream_fields["host_thread"])
        self._stream_thread_form = form
        self.stream_thread.activated.connect(lambda _i: self._commit_stream_thread())

    def _show_stream_thread(self, stream: Stream, pipeline: Pipeline) -> None:
        """The stream's thread, shown once the pipeline declares host threads."""
        device = pipeline.stream_device(stream.name)
        names = _threads_on(pipeline, device)
        _fill_threads(self.stream_thread, pipeline.device_thread(device), names, stream.host_thread)
        # the legacy default stream is every thread's
        self.stream_thread.setEnabled(stream.name != DEFAULT_STREAM)
        self._stream_thread_form.setRowVisible(
            self.stream_fields["host_thread"], bool(pipeline.host_threads)
        )

    def _commit_stream_thread(self) -> None:
        stream = self.current_stream()
        thread = self.stream_thread.currentData()
        if self._loading or stream is None or thread == stream.host_thread:
            return
        edit = SetStreamHostThread(stream.name, thread)
        if not self._push(self.stream_fields["host_thread"], edit):
            _show(self.stream_thread, stream.host_thread)
