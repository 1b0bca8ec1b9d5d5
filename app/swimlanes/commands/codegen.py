"""``swimlanes codegen FILE --lang python|cuda -o OUT``."""

from __future__ import annotations

import argparse

from swimlanes.codegen import LANGUAGES
from swimlanes.model.io import load_pipeline, write_text_atomic
from swimlanes.resources import pipeline_argument


def run(args: argparse.Namespace) -> int:
    pipeline = load_pipeline(pipeline_argument(args.file))
    text = LANGUAGES[args.lang](pipeline)
    write_text_atomic(args.output, text)
    print(f"wrote {args.output} ({args.lang}, {len(pipeline.program)} ops)")
    return 0
