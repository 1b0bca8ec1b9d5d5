"""What every trace reader shares: the errors, the limits, the progress and cancel callbacks,
and the file's text read a chunk at a time (gunzipped as it goes) without holding it whole.

The run file, streaming JSON and trace import modules all read through :func:`text_chunks` and
report problems as :class:`TraceError`; this module imports none of them.
"""

from __future__ import annotations

import codecs
import gzip
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: Decompressed size above which a trace is refused (reading is streamed, so this bounds time,
#: not memory).
DEFAULT_MAX_BYTES = 2 * 1024**3
#: The most trace events import keeps (GPU ops, host calls, flows, unfinished "B" events), and
#: the most rows of a timeline or run file: what import holds in memory grows with these.
DEFAULT_MAX_KEPT = 2_000_000
#: Read at a time: small enough that ``cancel`` and ``progress`` are polled every few
#: milliseconds of parsing.
_CHUNK = 64 * 1024

Progress = Callable[[float], None] | None
Cancel = Callable[[], bool] | None


class TraceError(ValueError):
    """A trace that cannot be opened; the message names what is wrong and where."""


class TraceCancelled(TraceError):
    """Loading was cancelled through the ``cancel`` callback (a TraceError, so that callers
    that handle bad files also handle a cancel)."""

    def __init__(self, message: str = "loading cancelled") -> None:
        super().__init__(message)


def trace_name(path: str | Path) -> str:
    """A file's name without ``.gz`` and ``.json``, to title a timeline opened from it."""
    name = Path(path).name
    for suffix in (".gz", ".json", ".sqlite"):
        name = name.removesuffix(suffix)
    return name


def text_chunks(
    path: str | Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Progress = None,
    cancel: Cancel = None,
) -> Iterator[str]:
    """The file's text a chunk at a time, gunzipped when it starts with the gzip magic bytes.

    Nothing but the current chunk is held. Reading stops with a :class:`TraceError` as soon as
    the text passes ``max_bytes`` (the gzip footer's size field is not trusted); ``cancel`` is
    polled and ``progress`` told the fraction of the file read (up to 0.9) after each chunk.
    """
    try:
        f = Path(path).open("rb")  # noqa: SIM115 - closed by the ``with`` below
    except FileNotFoundError:
        raise TraceError("no such file") from None
    except IsADirectoryError:
        raise TraceError("is a folder, not a trace file") from None
    except OSError as err:
        raise TraceError(f"cannot read it: {err.strerror or err}") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        gzipped = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        if not gzipped and size > max_bytes:
            raise TraceError(f"file is {size:,} bytes, over the {max_bytes:,}-byte limit")
        source = gzip.GzipFile(fileobj=f, mode="rb") if gzipped else f
        decoder = codecs.getincrementaldecoder("utf-8")()
        total = 0
        while raw := _read_chunk(source, min(_CHUNK, max_bytes + 1 - total)):
            total += len(raw)
            if total > max_bytes:
                raise TraceError(
                    f"gzip expands past the {max_bytes:,}-byte limit; refusing to load it"
                )
            yield _utf8(decoder, raw, total - len(raw))
            if cancel and cancel():
                raise TraceCancelled()
            if progress and size:
                progress(0.9 * min(f.tell() / size, 1.0))
        _utf8(decoder, b"", total, final=True)


def _read_chunk(source: Any, n: int) -> bytes:
    try:
        return source.read(n)
    except EOFError:
        raise TraceError("truncated gzip stream") from None
    except (gzip.BadGzipFile, zlib.error) as err:
        raise TraceError(f"corrupt gzip stream: {err}") from None
    except OSError as err:
        raise TraceError(f"cannot read it: {err.strerror or err}") from None


def _utf8(decoder: Any, raw: bytes, offset: int, *, final: bool = False) -> str:
    try:
        return decoder.decode(raw, final)
    except UnicodeDecodeError as err:
        raise TraceError(f"not UTF-8 text (byte {offset + err.start})") from None
