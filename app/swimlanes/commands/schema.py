"""``swimlanes schema [pipeline|run|timeline] [-o FILE]``: print or write a file format's JSON
Schema (draft 2020-12), generated from the loader's own tables.

The files shipped in ``resources/schema/`` are this command's output; after a change to the
format, regenerate them with ``swimlanes schema NAME -o resources/schema/NAME.schema.json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from swimlanes.model.atomic_write import write_text_atomic
from swimlanes.model.schema import pipeline_schema, schema_json
from swimlanes.services.errors import CommandError


def _run_schema() -> dict[str, Any]:
    from swimlanes.timeline.schema import run_schema

    return run_schema()


def _timeline_schema() -> dict[str, Any]:
    from swimlanes.timeline.schema import timeline_schema

    return timeline_schema()


#: Each file format's schema builder, by the name the command takes.
SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "pipeline": pipeline_schema,
    "run": _run_schema,
    "timeline": _timeline_schema,
}


def schema_text(name: str) -> str:
    """The schema of file format ``name`` as the shipped ``NAME.schema.json`` holds it."""
    return schema_json(SCHEMAS[name]())


def run(args: argparse.Namespace) -> int:
    text = schema_text(args.format)
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        write_text_atomic(args.output, text)
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise CommandError(f"cannot write {args.output}: {reason}") from None
    print(f"wrote {args.output} ({args.format} schema)", file=sys.stderr)
    return 0
