"""The pipeline editor's widgets: op palette, lane editor, host program panel, inspector."""

from swimlanes.ui.editor.inspector import Inspector
from swimlanes.ui.editor.lanes import LaneEditor
from swimlanes.ui.editor.palette import OpPalette
from swimlanes.ui.editor.program_panel import HostProgramPanel

__all__ = ["HostProgramPanel", "Inspector", "LaneEditor", "OpPalette"]
