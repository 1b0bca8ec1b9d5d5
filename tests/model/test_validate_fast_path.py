"""The validator's fast paths for plainly valid ops judge them as the full path does."""

from __future__ import annotations

from swimlanes.model.document import OP_KINDS
from swimlanes.model.validate_checks import Checker
from swimlanes.model.validate_devices import scope_of
from swimlanes.model.validate_ops import _parse_op, parse_ops


def test_every_kind_with_a_stream_and_bytes_alone_is_judged_as_the_full_path_judges_it() -> None:
    """The validator's shortcut for ``{"op", "stream", "bytes"}`` ops accepts those and only
    those that the full path accepts, as the same Op."""
    scope = scope_of([])
    scope.stream_device["s0"] = scope.first_device
    for kind in OP_KINDS:
        raw = {"op": kind, "stream": "s0", "bytes": 4096}
        fast, full = Checker(), Checker()
        assert parse_ops(fast, [raw], scope) == [_parse_op(full, raw, "program[0]", scope)], kind
        assert fast.problems == full.problems, kind
