"""``swimlanes codegen FILE --lang python|cuda -o OUT``.

OUT is written atomically (a temporary file beside it, then a rename): on any failure OUT keeps
its old content, no temporary file is left, and the command exits 2 with an ``error:`` line.
"""

from __future__ import annotations

import argparse

from swimlanes.codegen import LANGUAGES, CodegenError
from swimlanes.model.atomic_write import write_text_atomic
from swimlanes.model.io import load_pipeline
from swimlanes.resources import pipeline_argument
from swimlanes.services.errors import CommandError


def run(args: argparse.Namespace) -> int:
    pipeline = load_pipeline(pipeline_argument(args.file))
    try:
        text = LANGUAGES[args.lang](pipeline)
    except CodegenError as err:
        raise CommandError(f"cannot generate {args.lang} code: {err}") from None
    try:
        write_text_atomic(args.output, text)
    except (OSError, ValueError) as err:
        # ValueError: a path the OS cannot take at all (an embedded NUL byte).
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise CommandError(f"cannot write {args.output}: {reason}") from None
    print(f"wrote {args.output} ({args.lang}, {len(pipeline.program)} ops)")
    return 0
