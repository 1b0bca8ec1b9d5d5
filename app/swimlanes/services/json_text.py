"""JSON text for the command line's ``--json`` output, written fast for large timelines.

``json.dumps(doc, indent=2)`` runs Python's pure-Python encoder (the C encoder is used only
without ``indent``): on a 100,000-op ``simulate --json`` it took a third of the command's
time. :func:`json_text` writes the same document, still indented for people, with every list
of objects (the per-op rows) written one object per line by the C encoder, or, for rows given
as :class:`EncodedRows` (``simulate --json``'s), by whatever wrote their text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

#: One encoder for every row (json.dumps with arguments would build one per call).
_ROW = json.JSONEncoder(separators=(", ", ": "))


class EncodedRows:
    """A non-empty list of JSON objects already written as text: ``join(separator)`` gives
    them with ``separator`` between objects, each as ``json.JSONEncoder(separators=(", ",
    ": ")).encode`` writes that object (see timeline.json_rows). json_text writes them as it
    writes a list of dicts."""

    def __init__(self, join: Callable[[str], str]) -> None:
        self.join = join


def json_text(doc: dict[str, Any], indent: int = 2) -> str:
    """``doc`` as indented JSON, its lists of objects one object per line (parses back equal
    to ``doc``, with each :class:`EncodedRows` as the list it encodes)."""
    return "".join(json_chunks(doc, indent))


def json_chunks(doc: dict[str, Any], indent: int = 2) -> Iterator[str]:
    """:func:`json_text` in pieces, to write one after another (a 1e6-op document is 260 MB
    of text: joined, it would be copied once more, and once more by print)."""
    if not doc:
        yield "{}"
        return
    pad, inner = " " * indent, " " * (2 * indent)
    for n, (key, value) in enumerate(doc.items()):
        name = json.dumps(key)
        yield ("{\n" if n == 0 else ",\n") + pad + name + ": "
        if isinstance(value, EncodedRows):
            yield "[\n" + inner
            yield value.join(",\n" + inner)
            yield f"\n{pad}]"
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            rows = ",\n".join(inner + _ROW.encode(v) for v in value)
            yield f"[\n{rows}\n{pad}]"
        else:
            yield json.dumps(value, indent=indent).replace("\n", "\n" + pad)
    yield "\n}"
