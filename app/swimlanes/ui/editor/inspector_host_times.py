"""The inspector's measured host times: a call's own time (``call_us``, any op) and a pageable
D2H's copy-out (``copy_out_us``), as a captured or imported program carries them (a mixin of
:class:`~swimlanes.ui.editor.inspector.Inspector`).

Each replaces the device preset's figure for that one call, so that a rebuilt program keeps
its host's pace; clearing the field gives the preset's figure back. Changing a copy's host
memory or async mode drops them where they no longer apply (``model.op_defaults``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from PySide6.QtWidgets import QLineEdit

from swimlanes.model.document import Op
from swimlanes.ui.editor.fields import Field, line_edit, parse_number

if TYPE_CHECKING:
    from swimlanes.engine.presets import DevicePreset
    from swimlanes.ui.document_controller import DocumentController

#: The host-time rows of the op form: key (the Op attribute), title, placeholder.
HOST_TIME_ROWS: tuple[tuple[str, str, str], ...] = (
    ("call_us", "Call time (us)", "empty: the device preset's cost"),
    ("copy_out_us", "Copy-out time (us)", "empty: the device preset's copy-out"),
)
CALL_TIP = (
    "The call's own host time as measured in the captured program; replaces the device's "
    "cost of the call. Empty: the device preset's cost."
)
#: An async pageable H2D returns once its data is staged: its measured call covers that.
STAGING_CALL_TIP = f"{CALL_TIP} This copy's call stages its data: the time includes the staging."
COPY_OUT_TIP = (
    "The measured host time from the end of this pageable copy's DMA to its call's return "
    "(the host copying the data out of the driver's staging buffer, then returning); replaces "
    "the device's copy-out and return. Empty: the device preset's."
)


def us_text(value: float | None) -> str:
    """A time for a field: every digit a capture keeps (``:g`` would round 12345.678 to
    12345.7, and Enter in the field would then commit the rounded value)."""
    return "" if value is None else f"{value:.12g}"


class PresetSource(Protocol):
    """What gives the inspector the simulation's device preset (the main window)."""

    def document_preset(self) -> DevicePreset | None: ...


def preset_placeholder(figure: float | None, preset_name: str, fallback: str) -> str:
    """A time field's placeholder: the preset's figure the empty field stands for ("empty:
    8.65 us on h200"), or ``fallback`` when the preset gives none."""
    if figure is None:
        return fallback
    return f"empty: {figure:.4g} us on {preset_name}"


class HostTimeFields:
    """Builds, shows and commits the host-time rows; expects the Inspector's ``controller``,
    ``fields``, ``_set``, ``_parsed``, ``_over``, ``_on_commit``, ``_set_text`` and
    ``_loading``.

    ``preset_source`` (set by the main window) gives the device preset the simulation uses
    (its ``document_preset()``), so that an empty field says what it stands for; None: the
    placeholders say "the device preset's" without a figure. (An object, not a callable: a
    Python callable held by a QWidget crashed PySide6 when the widget was reparented.)"""

    controller: DocumentController
    fields: dict[str, Field]
    _loading: bool
    preset_source: PresetSource | None

    def _set(self, key: str, changes: dict, fld: Field | None = None) -> bool:
        raise NotImplementedError

    def _parsed(self, key: str, parse: Callable[[], object]) -> object | None:
        raise NotImplementedError

    def _over(self, key: str, value: float) -> bool:
        raise NotImplementedError

    def _on_commit(self, editor: QLineEdit, commit: Callable[[], None]) -> None:
        raise NotImplementedError

    def _set_text(self, editor: QLineEdit, text: str) -> None:
        raise NotImplementedError

    def current_op(self) -> Op | None:
        raise NotImplementedError

    def _build_host_time_rows(self) -> list[tuple[str, str, Field]]:
        """The host-time rows of the op form (added to it by the inspector)."""
        self.host_times: dict[str, QLineEdit] = {}
        rows = []
        for key, title, placeholder in HOST_TIME_ROWS:
            editor = line_edit(placeholder)
            editor.setToolTip(CALL_TIP if key == "call_us" else COPY_OUT_TIP)
            self.host_times[key] = editor
            rows.append((key, title, Field(editor)))
        return rows

    def _connect_host_time_rows(self) -> None:
        for key, editor in self.host_times.items():
            self._on_commit(editor, partial(self._commit_host_time, key))

    def preset_times(self, op: Op) -> tuple[str, dict[str, float]]:
        """The simulation's preset's name and its times for ``op`` (engine.plan_shape's
        ``preset_times_us``); ("", {}) when no preset is known or it cannot time the op."""
        from swimlanes.engine.plan_shape import preset_times_us

        source = self.preset_source
        preset = source.document_preset() if source is not None else None
        if preset is None:
            return "", {}
        try:
            return preset.name, preset_times_us(op, preset)
        except (ValueError, ArithmeticError):  # (OverflowError among them)
            return preset.name, {}

    def _show_host_times(self, op: Op, preset: tuple[str, dict[str, float]]) -> None:
        name, figures = preset
        for key, _title, fallback in HOST_TIME_ROWS:
            editor = self.host_times[key]
            self._set_text(editor, us_text(getattr(op, key)))
            editor.setPlaceholderText(preset_placeholder(figures.get(key), name, fallback))
        self.host_times["call_us"].setToolTip(STAGING_CALL_TIP if op.stages_on_call else CALL_TIP)

    def _commit_host_time(self, key: str) -> None:
        """Set the measured time typed into ``key``'s field; an empty field removes it (the
        preset's figure again). A capture may measure 0 us (the file format allows it)."""
        op = self.current_op()
        if self._loading or op is None:
            return
        text = self.host_times[key].text()
        if not text.strip():
            self._set(key, {key: None})
            return
        value = self._parsed(key, lambda: parse_number(text, strict=False))
        if not isinstance(value, float | int) or self._over(key, value):
            return
        self._set(key, {key: float(value)})
