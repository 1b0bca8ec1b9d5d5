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


def test_a_measured_copy_out_is_judged_as_the_full_path_judges_it() -> None:
    """``copy_out_us`` (a captured pageable D2H's host time after its DMA): a d2h takes it, as
    a number >= 0, on either path; another kind is told that only a d2h copies out."""
    scope = scope_of([])
    scope.stream_device["s0"] = scope.first_device
    d2h = {"op": "d2h", "stream": "s0", "bytes": 4096, "host_memory": "pageable"}
    for raw in ({**d2h, "copy_out_us": 91.5}, {**d2h, "copy_out_us": 0}):
        fast, full = Checker(), Checker()
        [op] = parse_ops(fast, [raw], scope)
        assert op == _parse_op(full, raw, "program[0]", scope)
        assert op is not None and op.copy_out_us == raw["copy_out_us"]
        assert not fast.problems and op.to_dict()["copy_out_us"] == raw["copy_out_us"]
    for raw, message in (
        ({**d2h, "copy_out_us": -1}, "program[0].copy_out_us: must be a number >= 0"),
        ({**d2h, "op": "h2d", "copy_out_us": 5}, "program[0].copy_out_us: only a d2h copy"),
    ):
        checker = Checker()
        assert parse_ops(checker, [raw], scope) == [None]
        assert any(str(p).startswith(message) for p in checker.problems), checker.problems
