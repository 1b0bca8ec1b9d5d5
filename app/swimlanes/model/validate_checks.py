"""The validator's building blocks: problems with their JSON paths, the error that carries
them, and the checker that tests one key against its limit and collects what is wrong.

Shared by :mod:`swimlanes.model.validate` (the document), :mod:`swimlanes.model.validate_ops`
(one op) and :mod:`swimlanes.model.validate_devices` (devices, communicators, collectives).
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from swimlanes.model.document import MAX_JSON_DEPTH, MAX_JSON_INT, MAX_NAME_CHARS, MIN_JSON_INT

#: Problems listed in one PipelineError; the rest are counted in a last line.
MAX_PROBLEMS = 100


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a document, at a JSON path such as ``program[3].bytes``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class PipelineError(ValueError):
    """A document that cannot be loaded; ``problems`` lists every reason (at most
    MAX_PROBLEMS of them, then a line counting the others)."""

    def __init__(self, problems: list[Problem]):
        if len(problems) > MAX_PROBLEMS:
            more = len(problems) - MAX_PROBLEMS
            problems = [*problems[:MAX_PROBLEMS], Problem("", f"... and {more} more problems")]
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused (as it was, after): reading a big document makes
    millions of dicts and ops and no reference cycles, and each collection of the older
    generations would rescan all of them (at 1e6 ops, 40% of validation's time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class HugeInt:
    """An integer literal that does not fit in 64 bits, as the JSON loader leaves it
    (``swimlanes.model.io`` never lets Python convert it): the validator refuses it where it
    stands, naming its path."""

    __slots__ = ("digits",)

    def __init__(self, literal: str) -> None:
        self.digits = len(literal.lstrip("-"))

    def __repr__(self) -> str:
        return f"<an integer of {self.digits} digits>"


def is_int(v: Any) -> bool:
    """An int that is not a bool (JSON's true and false are not numbers)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    """A finite int or float (ints are never converted: a huge one must not overflow)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and math.isfinite(v)


def short(v: Any, limit: int = 60) -> str:
    """``repr(v)`` cut to ``limit`` characters, for messages that quote a bad value (never
    converting a huge integer to text: Python refuses past 4300 digits)."""
    if isinstance(v, str) and len(v) > limit:
        return f"{v[:limit]!r}... ({len(v)} characters)"
    if isinstance(v, dict | list):
        return f"a JSON {'object' if isinstance(v, dict) else 'array'}"
    if is_int(v) and v.bit_length() > 64:
        return f"<an integer of about {int(v.bit_length() * 0.30103) + 1} digits>"
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "..."


def got(v: Any) -> str:
    """``got VALUE`` for a refusal: numbers readable, long values cut short."""
    if isinstance(v, float):
        return f"got {v:g}"
    return f"got {short(v)}"


class Checker:
    """Collects the problems of one document; each method checks one key of one object."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def positive_int(
        self, obj: dict, key: str, path: str, required: bool, maximum: int, unit: str = ""
    ) -> int | None:
        if key not in obj:
            if required:
                self.add(f"{path}.{key}", "is required (a positive integer)")
            return None
        v = obj[key]
        if isinstance(v, HugeInt):
            self.add(f"{path}.{key}", f"must be at most {maximum}{unit} ({got(v)})")
            return None
        if not is_int(v) or v <= 0:
            self.add(f"{path}.{key}", "must be a positive integer")
            return None
        if v > maximum:
            self.add(f"{path}.{key}", f"must be at most {maximum}{unit} ({got(v)})")
            return None
        return v

    def number(
        self, obj: dict, key: str, path: str, *, positive: bool, maximum: float, unit: str = ""
    ) -> float | None:
        if key not in obj:
            return None
        v = obj[key]
        if isinstance(v, HugeInt):
            self.add(f"{path}.{key}", f"must be at most {maximum:g}{unit} ({got(v)})")
            return None
        if not is_number(v) or (v <= 0 if positive else v < 0):
            kind = "a positive number" if positive else "a number >= 0"
            self.add(f"{path}.{key}", f"must be {kind}")
            return None
        if v > maximum:
            self.add(f"{path}.{key}", f"must be at most {maximum:g}{unit} ({got(v)})")
            return None
        return v

    def string(
        self, obj: dict, key: str, path: str, required: bool, maximum: int = MAX_NAME_CHARS
    ) -> str | None:
        if key not in obj:
            if required:
                self.add(f"{path}.{key}", "is required (a non-empty string)")
            return None
        v = obj[key]
        if not isinstance(v, str) or not v.strip():
            self.add(f"{path}.{key}", "must be a non-empty string")
            return None
        if len(v) > maximum:
            self.add(f"{path}.{key}", f"must be at most {maximum} characters (got {len(v)})")
            return None
        return v

    def json_values(self, value: Any, path: str) -> None:
        """Check kept unknown values: no integer past 64 bits, no NaN or infinity (which JSON
        cannot hold: saving them would write a file that never loads), no nesting past
        MAX_JSON_DEPTH. Iterative, linear in the size of ``value``."""
        stack: list[tuple[Any, str, int]] = [(value, path, 1)]
        while stack:
            v, where, depth = stack.pop()
            if isinstance(v, bool) or v is None or isinstance(v, str):
                continue
            if isinstance(v, HugeInt) or (is_int(v) and not MIN_JSON_INT <= v <= MAX_JSON_INT):
                self.add(where, f"integers must fit in 64 bits ({got(v)})")
            elif isinstance(v, float):
                if not math.isfinite(v):
                    self.add(where, f"must be a finite number (got {v!r})")
            elif isinstance(v, dict | list | tuple):  # (a tuple is saved as an array)
                if depth > MAX_JSON_DEPTH:
                    self.add(where, f"nested deeper than {MAX_JSON_DEPTH} levels")
                    continue
                items = v.items() if isinstance(v, dict) else enumerate(v)
                for k, item in items:
                    if not isinstance(item, str):
                        sub = key_path(where, k) if isinstance(v, dict) else f"{where}[{k}]"
                        stack.append((item, sub, depth + 1))
            elif not is_int(v):
                self.add(where, f"is not a JSON value ({type(v).__name__})")


def key_path(path: str, key: Any) -> str:
    """``path.key``, the key cut to 40 characters."""
    key = str(key)
    if len(key) > 40:
        key = key[:40] + "..."
    return f"{path}.{key}" if path else key
