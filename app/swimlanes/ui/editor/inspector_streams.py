"""The inspector's stream page: a stream's name, kind and priority (a mixin of
:class:`~swimlanes.ui.editor.inspector.Inspector`, which also adds the stream's device and
host-thread rows of its other mixins).

Each change is one undoable edit (RenameStream, SetStreamFields); a refused one is shown in red
under its field and the document stays as it was. The legacy default stream is always there
as CUDA makes it: its fields are shown, not editable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QComboBox, QFormLayout, QLineEdit, QWidget

from swimlanes.model.document import (
    DEFAULT_STREAM,
    MAX_NAME_CHARS,
    MAX_PRIORITY,
    MIN_PRIORITY,
    Stream,
)
from swimlanes.model.edits import Edit, RenameStream, SetStreamFields
from swimlanes.ui.editor.fields import Field, FieldError, line_edit, parse_number

if TYPE_CHECKING:
    from swimlanes.ui.document_controller import DocumentController

_STREAM_KIND_TITLES = {
    "legacy_default": "legacy default",
    "per_thread_default": "per-thread default",
    "blocking": "blocking",
    "non_blocking": "non-blocking",
}


class StreamFields:
    """Builds, shows and commits the stream page; expects the Inspector's ``controller``,
    ``title``, ``call``, ``pages``, ``_loading``, ``_push``, ``_on_commit``, ``_set_text``
    and ``current_stream``, and its device and thread mixins' stream rows."""

    controller: DocumentController
    _loading: bool

    def _push(self, fld: Field, edit: Edit) -> bool:
        raise NotImplementedError

    def _on_commit(self, editor: QLineEdit, commit: Callable[[], None]) -> None:
        raise NotImplementedError

    def _set_text(self, editor: QLineEdit, text: str) -> None:
        raise NotImplementedError

    def current_stream(self) -> Stream | None:
        raise NotImplementedError

    def _build_stream_page(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        form.setContentsMargins(0, 0, 0, 0)
        self.stream_name = line_edit()
        self.stream_name.setMaxLength(MAX_NAME_CHARS)
        self.stream_kind = QComboBox()
        for kind, title in _STREAM_KIND_TITLES.items():
            self.stream_kind.addItem(title, kind)
        self.priority = line_edit("lower is higher priority")
        self.stream_fields = {
            "name": Field(self.stream_name),
            "kind": Field(self.stream_kind),
            "priority": Field(self.priority),
        }
        form.addRow("Name", self.stream_fields["name"])
        form.addRow("Kind", self.stream_fields["kind"])
        form.addRow("Priority", self.stream_fields["priority"])
        self.stream_form = form
        self._build_stream_device_row(form)
        self._build_stream_thread_row(form)
        self.stream_name.editingFinished.connect(self._commit_stream_name)
        self.stream_kind.activated.connect(lambda _i: self._commit_stream_kind())
        self._on_commit(self.priority, self._commit_priority)
        return page

    def _show_stream(self, stream: Stream) -> None:
        self.pages.setCurrentIndex(2)
        self.title.setText(f"Stream {stream.name}")
        self.call.setText(_stream_call(stream))
        self.stream_name.setText(stream.name)
        self.stream_kind.setCurrentIndex(list(_STREAM_KIND_TITLES).index(stream.kind))
        self._set_text(self.priority, str(stream.priority))
        fixed = stream.name == DEFAULT_STREAM
        for w in (self.stream_name, self.stream_kind, self.priority):
            w.setEnabled(not fixed)
        # CUDA creates a default stream without a priority: it runs at 0 whatever is typed.
        default_kind = stream.kind in ("legacy_default", "per_thread_default")
        self.priority.setEnabled(not fixed and not default_kind)
        self.priority.setToolTip(DEFAULT_PRIORITY_TIP if default_kind else "")
        self._show_stream_device(stream, self.controller.pipeline)
        self._show_stream_thread(stream, self.controller.pipeline)

    def _commit_stream_name(self) -> None:
        stream = self.current_stream()
        new = self.stream_name.text().strip()
        if self._loading or stream is None or new == stream.name:
            return
        if self._push(self.stream_fields["name"], RenameStream(stream.name, new)):
            self.controller.set_selected_stream(new)

    def _commit_stream_kind(self) -> None:
        stream = self.current_stream()
        kind = self.stream_kind.currentData()
        if self._loading or stream is None or kind == stream.kind:
            return
        self._push(self.stream_fields["kind"], SetStreamFields(stream.name, kind=kind))

    def _commit_priority(self) -> None:
        stream = self.current_stream()
        if self._loading or stream is None:
            return
        fld = self.stream_fields["priority"]
        try:
            value = parse_number(self.priority.text(), integer=True, minimum=None)
        except FieldError as err:
            fld.show_error(str(err))
            return
        if not MIN_PRIORITY <= value <= MAX_PRIORITY:
            fld.show_error(f"must be from {MIN_PRIORITY} to {MAX_PRIORITY} (a C int)")
            return
        if value != stream.priority:
            self._push(fld, SetStreamFields(stream.name, priority=int(value)))


#: Why a default stream's priority cannot be edited.
DEFAULT_PRIORITY_TIP = (
    "A default stream runs at the default priority (0): CUDA creates it without one, so a "
    "priority here has no effect. Make it a blocking or non-blocking stream to give it one."
)


def _stream_call(stream: Stream) -> str:
    """How the stream is made in CUDA."""
    if stream.kind == "legacy_default":
        return "The legacy default stream (0): always there, synchronises with blocking streams."
    if stream.kind == "per_thread_default":
        return "cudaStreamPerThread (--default-stream per-thread)"
    flags = "cudaStreamNonBlocking" if stream.kind == "non_blocking" else "cudaStreamDefault"
    return f"cudaStreamCreateWithPriority(&{stream.name}, {flags}, {stream.priority})"
