"""The fuzz suite at length: every seeded fuzzer in tests/fuzz, with many more cases than
`make test` runs.

Each fuzzer is a function ``fuzz_<area>(count, seed)`` in ``tests/fuzz/<area>.py`` that returns
the cases that gave a traceback, a hang or a wrong answer (a list, or a report whose
``failures`` lists them).
Prints one JSON line per fuzzer and seed (cases, failures, seconds) and the failures
themselves; exits 1 if any fuzzer found one.

    python benchmarks/fuzz_long.py [--count 2000] [--seeds 1 2 3] [--only pipeline traces]
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parent.parent / "tests" / "fuzz"

Fuzzer = Callable[[int, int], object]


def fuzzers() -> dict[str, Fuzzer]:
    """Area name -> its fuzz function, for every tests/fuzz/<area>.py that defines one."""
    sys.path.insert(0, str(FUZZ_DIR))  # the fuzz helpers are plain modules, as in the tests
    found: dict[str, Fuzzer] = {}
    for path in sorted(FUZZ_DIR.glob("*.py")):
        if path.name.startswith("test_") or path.name.startswith("_"):
            continue
        module = importlib.import_module(path.stem)
        function = getattr(module, f"fuzz_{path.stem}", None)
        if callable(function):
            found[path.stem] = function
    return found


def _failures(result: object) -> list[str]:
    """The failures a fuzzer found: a list of descriptions, or a report with ``failures``."""
    found = getattr(result, "failures", result)
    return [str(f) for f in found]  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="cases per fuzzer and seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--only", nargs="+", help="areas to run (default: all)")
    args = parser.parse_args(argv)
    available = fuzzers()
    areas = args.only or list(available)
    unknown = [a for a in areas if a not in available]
    if unknown:
        parser.error(f"no fuzzer for {', '.join(unknown)} (have: {', '.join(available)})")
    any_failed = False
    for area in areas:
        for seed in args.seeds:
            t0 = time.perf_counter()
            failures = _failures(available[area](args.count, seed))
            seconds = time.perf_counter() - t0
            print(
                json.dumps(
                    {
                        "fuzzer": area,
                        "seed": seed,
                        "cases": args.count,
                        "failures": len(failures),
                        "seconds": round(seconds, 1),
                    }
                ),
                flush=True,
            )
            for failure in failures:
                print(f"  {area} seed {seed}: {failure}")
            any_failed = any_failed or bool(failures)
    return 1 if any_failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
