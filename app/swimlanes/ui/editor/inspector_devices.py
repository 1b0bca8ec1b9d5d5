"""The inspector's multi-device fields: a host-only op's host thread, a peer copy's devices, a
collective's communicator and a broadcast's root, and a stream's device (a mixin of
:class:`~swimlanes.ui.editor.inspector.Inspector`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QComboBox, QFormLayout

from swimlanes.model.document import DEFAULT_STREAM, Op, Pipeline, Stream
from swimlanes.model.edits import Edit, SetStreamDevice
from swimlanes.ui.editor.fields import Field

if TYPE_CHECKING:
    from swimlanes.ui.document_controller import DocumentController

#: The device rows of the op form: key, title, tooltip.
DEVICE_ROWS: tuple[tuple[str, str, str], ...] = (
    ("device", "Host thread", "The device whose host thread issues this call"),
    ("src_device", "From device", "The device whose memory the copy reads"),
    ("dst_device", "To device", "The device whose memory the copy writes"),
    ("communicator", "Communicator", "The devices this collective runs across (NCCL comm)"),
    ("root", "Root device", "The device whose buffer is broadcast"),
)
NO_COMMUNICATOR = "none declared"


def _fill(combo: QComboBox, items: list[str], current: str | None) -> None:
    """Replace ``combo``'s items (if they changed) and show ``current``."""
    if [combo.itemText(i) for i in range(combo.count())] != items:
        combo.clear()
        combo.addItems(items)
    combo.setCurrentIndex(items.index(current) if current in items else -1)


class DeviceFields:
    """Builds, shows and commits the device rows; expects the Inspector's ``controller``,
    ``fields``, ``_set`` and ``_loading``."""

    controller: DocumentController
    fields: dict[str, Field]
    stream_fields: dict[str, Field]
    _loading: bool

    def _set(self, key: str, changes: dict, fld: Field | None = None) -> bool:
        raise NotImplementedError

    def _push(self, fld: Field, edit: Edit) -> bool:
        raise NotImplementedError

    def current_stream(self) -> Stream | None:
        raise NotImplementedError

    # -- a stream's device ----------------------------------------------------------------
    def _build_stream_device_row(self, form: QFormLayout) -> None:
        self.stream_device = QComboBox()
        self.stream_device.setToolTip(
            "The device the stream belongs to: its ops run there, issued by its host thread"
        )
        self.stream_device.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.stream_device.setMinimumContentsLength(6)
        self.stream_fields["device"] = Field(self.stream_device)
        form.addRow("Device", self.stream_fields["device"])
        self._stream_form = form
        self.stream_device.activated.connect(lambda _i: self._commit_stream_device())

    def _show_stream_device(self, stream: Stream, pipeline: Pipeline) -> None:
        """The stream's device, shown in a pipeline of several devices only."""
        _fill(self.stream_device, pipeline.device_names, pipeline.stream_device(stream.name))
        # the legacy default stream is the first device's
        self.stream_device.setEnabled(stream.name != DEFAULT_STREAM)
        self._stream_form.setRowVisible(self.stream_fields["device"], pipeline.is_multi_device)

    def _commit_stream_device(self) -> None:
        stream = self.current_stream()
        device = self.stream_device.currentText()
        pipeline = self.controller.pipeline
        if self._loading or stream is None or device == pipeline.stream_device(stream.name):
            return
        self._push(self.stream_fields["device"], SetStreamDevice(stream.name, device))

    def _build_device_rows(self) -> list[tuple[str, str, Field]]:
        """The device rows of the op form (added to it by the inspector)."""
        self.device_combos: dict[str, QComboBox] = {}
        rows = []
        for key, title, tip in DEVICE_ROWS:
            combo = QComboBox()
            combo.setToolTip(tip)
            # device names can be long: they must not widen the inspector's dock
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
            )
            combo.setMinimumContentsLength(6)
            combo.activated.connect(lambda _i, k=key: self._commit_device_field(k))
            self.device_combos[key] = combo
            rows.append((key, title, Field(combo)))
        comm = self.device_combos["communicator"]
        comm.setPlaceholderText(NO_COMMUNICATOR)
        comm.setToolTip(f"{comm.toolTip()}; declare them in Pipeline > Devices and communicators")
        return rows

    def _show_device_fields(self, op: Op, pipeline: Pipeline) -> None:
        devices = pipeline.device_names
        home = pipeline.op_device(op)
        c = self.device_combos
        _fill(c["device"], devices, op.device or devices[0])
        _fill(c["src_device"], devices, op.src_device or home)
        _fill(c["dst_device"], devices, op.dst_device or home)
        _fill(c["communicator"], [m.name for m in pipeline.communicators], op.communicator)
        comm = pipeline.communicator(op.communicator)
        members = list(comm.devices) if comm is not None else []
        _fill(c["root"], members, op.root or (members[0] if members else None))

    def _commit_device_field(self, key: str) -> None:
        value: Any = self.device_combos[key].currentText() or None
        if self._loading or value is None:
            return
        self._set(key, self._device_changes(key, value))

    def _device_changes(self, key: str, value: str) -> dict[str, Any]:
        """The change choosing ``value`` for ``key`` makes. A peer copy whose other end is
        ``value`` already, on a stream of a third device, swaps its ends: a copy inside one
        device must run on a stream of that device, so choosing its destination as the
        source means "the other way round"."""
        changes: dict[str, Any] = {key: value}
        ops = self.controller.selected_ops()
        if key not in ("src_device", "dst_device") or len(ops) != 1:
            return changes
        op, pipeline = ops[0], self.controller.pipeline
        home = pipeline.op_device(op)
        other = "dst_device" if key == "src_device" else "src_device"
        current = getattr(op, key) or home
        if (getattr(op, other) or home) == value and value != home:
            changes[other] = current
        return changes
