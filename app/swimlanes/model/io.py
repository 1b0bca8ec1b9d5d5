"""Reading and writing pipeline files (JSON). Saving is atomic: temp file, then rename.

Loading never lets bad input reach Python's limits: the file's size, its text encoding, the
nesting of its arrays and objects (checked without recursion before parsing) and the size of
its integer literals (never converted past 64 bits) are checked first, then the validator
checks every key against the limits in :mod:`swimlanes.model.document`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

# The atomic writers live in atomic_write; imported from here by callers that predate it.
from swimlanes.model.atomic_write import dump_json_atomic as dump_json_atomic
from swimlanes.model.atomic_write import write_text_atomic as write_text_atomic
from swimlanes.model.document import MAX_JSON_DEPTH, MAX_JSON_INT, MIN_JSON_INT, Pipeline
from swimlanes.model.validate import HugeInt, PipelineError, Problem, pipeline_from_dict
from swimlanes.model.validate_checks import gc_paused

orjson: Any
try:  # optional: only faster (see _fast_parse)
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None

MAX_PIPELINE_FILE_BYTES = 256 * 1024 * 1024

#: Leading bytes of files that are not text, and what they are.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"PK\x03\x04", "a zip archive"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"\x89PNG", "a PNG image"),
    (b"%PDF", "a PDF document"),
    (b"\xff\xfe", "UTF-16 text: save it as UTF-8"),
    (b"\xfe\xff", "UTF-16 text: save it as UTF-8"),
)
#: Bytes that are not JSON structure (brackets and quotes): deleted by the depth check.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_OPEN_CLOSE = bytes.maketrans(b"[{]}", b"(())")
_STRING = re.compile(rb'"[^"]*"')
#: Digits, each as b"0" (and every other byte as b" "): the text of every number's digits.
_DIGITS = bytes.maketrans(bytes(range(256)), b" " * 48 + b"0" * 10 + b" " * 198)
#: Digits in a row that no literal within 64 bits has (18 digits always fit).
_LONG_DIGITS = b"0" * 19
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.DOTALL)


def _parse_int(literal: str) -> int | HugeInt:
    """json's parse_int: an integer literal, or a HugeInt marker for one past 64 bits (which
    the validator refuses at its path). Long literals are never converted: Python refuses
    past 4300 digits and takes quadratic time below."""
    if len(literal) <= 18:
        return int(literal)
    if len(literal) > 20:
        return HugeInt(literal)
    value = int(literal)
    return value if MIN_JSON_INT <= value <= MAX_JSON_INT else HugeInt(literal)


def _too_deep(raw: bytes) -> bool:
    """Whether arrays and objects nest deeper than MAX_JSON_DEPTH anywhere in ``raw`` (JSON
    text as UTF-8). No recursion and no Python loop over the text: escapes, everything but
    quotes and brackets, and strings are deleted by C-level passes, then each pass removes
    the innermost pairs of brackets, so MAX_JSON_DEPTH passes empty any document that is not
    too deep. (Malformed text is left to the JSON parser to report.)"""
    if b"\\" in raw:  # escaped backslashes, then escaped quotes: gone (as a JSON parser reads)
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Quotes and brackets only; adjacent quotes go at once (an empty string, or one string's
    # end and the next one's start: either way what lies inside strings stays inside), and
    # the few strings left, those holding brackets, go with a regex.
    structure = raw.translate(None, _NOT_STRUCTURE)
    if structure.count(b"[") + structure.count(b"{") <= MAX_JSON_DEPTH:
        return False
    structure = structure.replace(b'""', b"")
    if b'"' in structure:
        structure = _STRING.sub(b"", structure)
    brackets = structure.translate(_OPEN_CLOSE)
    for _ in range(MAX_JSON_DEPTH):
        if not brackets:
            return False
        brackets = brackets.replace(b"()", b"")
    return b"()" in brackets


def _deep_path(text: str) -> str:
    """The JSON path where nesting first passes MAX_JSON_DEPTH (for the message only: a
    token-by-token scan, run once a document has been refused)."""
    frames: list[list[Any]] = []  # [is_object, key or index, expecting a key]
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in "[{":
            if len(frames) >= MAX_JSON_DEPTH:
                break
            frames.append([tok == "{", None if tok == "{" else 0, tok == "{"])
        elif tok in "]}":
            if frames:
                frames.pop()
        elif not frames:
            continue
        elif tok == ",":
            top = frames[-1]
            if top[0]:
                top[2] = True
            else:
                top[1] += 1
        elif tok == ":":
            frames[-1][2] = False
        elif frames[-1][0] and frames[-1][2]:
            try:
                frames[-1][1] = json.loads(tok)
            except ValueError:
                frames[-1][1] = tok
    path = ""
    for is_object, key, _ in frames:
        if is_object:
            key = str(key)[:40]
            path += f".{key}" if path else key
        else:
            path += f"[{key}]"
    return path if len(path) <= 120 else path[:100] + "..."


def binary_kind(raw: bytes) -> str | None:
    """What ``raw`` is if it is not a UTF-8 text file (None if it is)."""
    for magic, what in _MAGIC:
        if raw.startswith(magic):
            return what
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return f"binary data, not UTF-8 text (byte {err.start})"
    return None


def parse_json(text: str, raw: bytes | None = None) -> Any:
    """JSON text (and its UTF-8 bytes, if at hand) parsed within the limits: nesting at most
    MAX_JSON_DEPTH (checked before parsing, without recursion) and integers past 64 bits left
    as :class:`HugeInt` markers for the validator. PipelineError for what cannot be parsed."""
    if _too_deep(text.encode("utf-8", "surrogatepass") if raw is None else raw):
        path = _deep_path(text)
        raise PipelineError(
            [Problem(path, f"nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects")]
        )
    try:
        data = json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as err:
        raise PipelineError(
            [Problem("", f"not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}")]
        ) from None
    except RecursionError:  # cannot happen after _too_deep; kept as the last line of defence
        raise PipelineError(
            [Problem("", f"nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects")]
        ) from None
    if "\\ud" in text or "\\uD" in text:  # a \uD800-\uDFFF escape: maybe half a pair
        where = _unpaired_surrogate(data)
        if where is not None:
            raise PipelineError(
                [Problem(where, "holds half of a UTF-16 surrogate pair (a \\uD800-\\uDFFF "
                         "escape without its other half), which is not text")]
            )  # fmt: skip
    return data


def _unpaired_surrogate(data: Any) -> str | None:
    """The path of the first string (a key or a value) in ``data`` with a lone surrogate,
    which no text encoding can write (printing or saving it as UTF-8 would fail)."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if _lone(value):
                return path or "(the document)"
        elif isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and _lone(key):
                    return where
                stack.append((item, where))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{k}]") for k, item in enumerate(value))
    return None


def _lone(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _fast_parse(raw: bytes) -> Any:
    """What :func:`parse_json` gives for ``raw``, parsed by orjson, or :data:`_SLOW` when
    that might differ: orjson missing, or refusing the text (invalid UTF-8 or JSON, a lone
    surrogate, NaN, a float past range: parse_json reports or keeps those as it always did),
    an integer literal past 18 digits (parse_json keeps those past 64 bits as HugeInt, orjson
    makes floats of them), or nesting past MAX_JSON_DEPTH (reported by parse_json). Otherwise
    the two parsers give the same objects: every integer fits in 64 bits, and both read a
    float literal as the nearest double."""
    if orjson is None or raw.translate(_DIGITS).find(_LONG_DIGITS) >= 0 or _too_deep(raw):
        return _SLOW
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _SLOW


#: :func:`_fast_parse`'s answer when parse_json must read the text.
_SLOW = object()


def pipeline_from_json(text: str) -> Pipeline:
    """Parse JSON text into a validated :class:`Pipeline`."""
    return pipeline_from_dict(parse_json(text))


def load_pipeline(path: str | os.PathLike[str]) -> Pipeline:
    """Load and validate a pipeline file; every problem comes back in a :class:`PipelineError`.

    A file that is not UTF-8 text (a gzipped trace, an image, UTF-16) is refused with what it
    seems to be, before any parsing."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_PIPELINE_FILE_BYTES:
            raise PipelineError(
                [Problem("", f"{p.name} is {size} bytes: too large for a pipeline")]
            )
        raw = p.read_bytes()
    except FileNotFoundError:
        raise PipelineError([Problem("", f"no such file: {p}")]) from None
    except IsADirectoryError:
        raise PipelineError([Problem("", f"{p} is a folder, not a pipeline file")]) from None
    except (OSError, ValueError) as err:  # ValueError: a path with a NUL character
        reason = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise PipelineError([Problem("", f"cannot read {p}: {reason}")]) from None
    # A document orjson reads is UTF-8 text (and no magic number starts JSON): not binary.
    with gc_paused():  # (see gc_paused: parsing makes as many dicts as the program has ops)
        data = _fast_parse(raw)
        if data is not _SLOW:
            return pipeline_from_dict(data)
    what = binary_kind(raw)
    if what is not None:
        if what.startswith("gzip"):  # what Swimlanes gzips is traces
            what += "; open a trace with 'stats' or File > Open measurement"
        raise PipelineError([Problem("", f"{p} is not a pipeline file ({what})")])
    return pipeline_from_dict(parse_json(raw.decode("utf-8"), raw))


def pipeline_to_json(pipeline: Pipeline) -> str:
    return json.dumps(pipeline.to_dict(), indent=2) + "\n"


def save_pipeline(pipeline: Pipeline, path: str | os.PathLike[str]) -> None:
    """Save atomically."""
    write_text_atomic(path, pipeline_to_json(pipeline))
