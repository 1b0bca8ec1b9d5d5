"""Byte-for-byte check of the command line's output against another checkout's.

Runs the same commands with this code and with ``--baseline APP_DIR`` (the ``app`` folder of
another checkout, e.g. from ``git archive`` of the commit before a change) and compares what
each printed (stdout and stderr bytes, exit status):

- ``simulate FILE --device P --json`` and the table, for every shipped example and capture on
  every preset (built in and multi-GPU), plus ``--insights``, ``--band`` (6 samples) and
  ``critical-path --json``;
- ``simulate --json`` of random-mix files (benchmarks/bench_engine.py's) of ``--sizes`` ops
  (default 1000 10000 100000: the two smaller on every single-GPU preset, the largest on h200,
  ideal and c1060);
- edge cases written here: non-ASCII, control and escaped characters in names and labels,
  extra keys, literals past 64 bits or past float range, NaN, a byte order mark, deep
  nesting, a program with errors, an empty program.

Commands run in one process per variant (``swimlanes.cli.main`` with stdout and stderr
captured as bytes), and a few as real subprocesses (what a shell sees). Prints one line per
differing command and exits 1 if any differ. Usage: check_output.py --baseline APP_DIR
[--this APP_DIR] [--sizes N ...] [--quick] (quick: examples on h200 only, sizes 1000 10000).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SINGLE_PRESETS = ("ideal", "h200", "a100", "rtx4090", "c1060", "c2050", "k20c")
MULTI_PRESETS = ("2x-h200-nvlink", "4x-h200-nvlink", "8x-h200-nvlink", "2x-h200-pcie")


def _edge_documents() -> dict[str, str]:
    """Pipeline files (as text) that take the loader's and writers' rare paths."""
    streams = [{"name": "s0", "kind": "blocking", "priority": 0}]
    labels = [
        "caf\u00e9",
        "\u4e2d\u6587",
        "emoji \U0001f600",
        "line\u2028sep",
        "tab\tnew\nline",
        "del\x7f",
        'quote " and \\ backslash',
        '}, {"index": 9, "op": "x',
        "/slash",
    ]
    program = [
        {"op": "h2d", "stream": "s0", "bytes": 4096 * (k + 1), "label": label}
        for k, label in enumerate(labels)
    ]
    program.append({"op": "kernel", "stream": "s0", "blocks": 8, "threads": 128, "duration_us": 3})
    docs = {}
    base = {"format": "swimlanes-pipeline", "version": 1, "name": "edge \u00e9", "streams": streams}
    docs["unicode"] = json.dumps({**base, "program": program}, ensure_ascii=False)
    docs["unicode-escaped"] = json.dumps({**base, "program": program})
    surrogate = json.dumps({**base, "program": program[:1]}).replace("caf\\u00e9", "\\ud800")
    docs["lone-surrogate"] = surrogate
    extra = [
        {"op": "h2d", "stream": "s0", "bytes": 1024, "note": {"deep": [1, 2.5, None, "x"]}},
        {"op": "kernel", "stream": "s0", "blocks": 2, "threads": 64, "block_us": 0.1,
         "blocks_per_sm": 4},
        {"op": "host", "duration_us": 0},
        {"op": "d2h", "stream": "s0", "bytes": 2048, "host_memory": "pageable", "async": False},
        {"op": "kernel", "stream": "s0", "blocks": 4, "threads": 32, "flops": 1e9,
         "bytes": 4096},
        {"op": "memset", "stream": "s0", "bytes": 100, "call_us": 1.25},
        {"op": "kernel", "blocks": 1, "threads": 1, "duration_us": 1e-3},
    ]  # fmt: skip
    docs["extra-keys"] = json.dumps({**base, "program": extra, "custom": {"a": [1, {"b": 2}]}})
    digits = json.dumps({**base, "program": extra[:1]})
    docs["long-float"] = digits.replace(
        '"bytes": 1024', '"bytes": 1024, "x": 0.000123456789012345678'
    )
    docs["huge-int"] = digits.replace('"bytes": 1024', '"bytes": 18446744073709551616')
    docs["int-2-63"] = digits.replace('"bytes": 1024', '"bytes": 9223372036854775808')
    docs["negative-huge"] = digits.replace('"bytes": 1024', '"bytes": -9223372036854775809')
    docs["float-inf"] = digits.replace('"bytes": 1024', '"bytes": 1024, "x": 1e400')
    docs["nan"] = digits.replace('"bytes": 1024', '"bytes": 1024, "x": NaN')
    docs["bom"] = "\ufeff" + digits
    docs["deep"] = digits.replace('"bytes": 1024', '"bytes": 1024, "x": ' + "[" * 70 + "]" * 70)
    docs["deep-ok"] = digits.replace('"bytes": 1024', '"bytes": 1024, "x": ' + "[" * 60 + "]" * 60)
    bad = [
        {"op": "h2d", "stream": "nope", "bytes": 1},
        {"op": "kernel", "stream": "s0", "blocks": 0, "threads": 2000, "duration_us": -1},
        {"op": "warp"},
        {"op": "event_wait", "stream": "s0"},
        {"op": "h2d", "stream": "s0", "bytes": 1.5, "label": 3},
        "not an op",
    ]
    docs["errors"] = json.dumps({**base, "program": bad})
    docs["empty"] = json.dumps({**base, "program": []})
    docs["host-only"] = json.dumps({**base, "program": [{"op": "host", "duration_us": 0}]})
    docs["not-json"] = '{"format": "swimlanes-pipeline", "version": 1, "program": [}'
    return docs


def write_cases(folder: Path, sizes: list[int], quick: bool) -> list[list[str]]:
    """The files to run on (written into ``folder``) and the command lines."""
    sys.path.insert(0, str(HERE))
    import bench_engine

    for name, text in _edge_documents().items():
        (folder / f"edge-{name}.json").write_text(text, encoding="utf-8", errors="surrogatepass")
    from swimlanes.resources import captures_dir, examples_dir

    shipped = sorted(examples_dir().glob("*.json")) + sorted(captures_dir().glob("*.json"))
    presets = ("h200",) if quick else SINGLE_PRESETS + MULTI_PRESETS
    cases: list[list[str]] = []
    for path in shipped:
        for preset in presets:
            cases.append(["simulate", str(path), "--device", preset, "--json"])
            cases.append(["simulate", str(path), "--device", preset])
        cases.append(["simulate", str(path), "--json", "--insights"])
        cases.append(["simulate", str(path), "--band", "--band-samples", "6", "--insights"])
        cases.append(["simulate", str(path), "--json", "--band", "--band-samples", "6"])
        cases.append(["critical-path", str(path), "--json"])
    for path in sorted(folder.glob("edge-*.json")):
        cases.append(["simulate", str(path), "--json"])
        cases.append(["simulate", str(path)])
    for n in sizes:
        path = bench_engine.write_random_file(n, str(folder))
        big = n > 10_000
        on = ("h200", "ideal", "c1060") if big else ("h200",) if quick else SINGLE_PRESETS
        for preset in on:
            cases.append(["simulate", path, "--device", preset, "--json"])
        if not big:
            cases.append(["simulate", path])
    cases += [["devices", "--json"], ["examples"], ["schema"]]
    return cases


def run_cases(cases_file: str, out_file: str) -> None:
    """In this process: each command's stdout, stderr and status, hashed, one JSON line each."""
    from swimlanes.cli import main

    cases = json.loads(Path(cases_file).read_text())
    real_out, real_err = sys.stdout, sys.stderr
    with open(out_file, "w") as out:
        for argv in cases:
            sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
            sys.stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
            try:
                rc = main(argv)
            except SystemExit as err:
                rc = err.code
            except Exception as err:  # a traceback is an outcome to compare too
                rc = f"raised {type(err).__name__}: {err}"
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                got = sys.stdout.buffer.getvalue(), sys.stderr.buffer.getvalue()  # type: ignore[attr-defined]
                sys.stdout, sys.stderr = real_out, real_err
            line = {
                "argv": argv,
                "rc": rc,
                "stdout": hashlib.sha256(got[0]).hexdigest(),
                "stdout_bytes": len(got[0]),
                "stderr": got[1].decode("utf-8", "replace"),
            }
            out.write(json.dumps(line) + "\n")


def _variant_env(app_dir: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if app_dir:
        env["PYTHONPATH"] = app_dir
    return env


def _subprocess_output(argv: list[str], env: dict[str, str]) -> tuple[bytes, bytes, int]:
    code = "import sys; from swimlanes.cli import main; sys.exit(main())"
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, env=env)
    return proc.stdout, proc.stderr, proc.returncode


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", required=True, help="the app folder of the other checkout")
    parser.add_argument("--this", help="the app folder to check (default: this checkout's)")
    parser.add_argument("--sizes", nargs="*", type=int, default=[1_000, 10_000, 100_000])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--run-cases", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_cases:
        run_cases(*args.run_cases)
        return 0
    sizes = [1_000, 10_000] if args.quick and args.sizes == [1_000, 10_000, 100_000] else args.sizes
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = write_cases(folder, sizes, args.quick)
        (folder / "cases.json").write_text(json.dumps(cases))
        results = {}
        for name, app in (("baseline", args.baseline), ("this", args.this)):
            out = folder / f"{name}.jsonl"
            cmd = [sys.executable, __file__, "--baseline", "-", "--run-cases"]
            subprocess.run([*cmd, str(folder / "cases.json"), str(out)], check=True,
                           env=_variant_env(app))  # fmt: skip
            results[name] = out.read_text().splitlines()
        bad = 0
        for old, new in zip(results["baseline"], results["this"], strict=True):
            if old != new:
                bad += 1
                print("differs:", json.loads(new)["argv"], file=sys.stderr)
        # What a shell sees (stdout's own encoding and buffering): a few as subprocesses.
        edge = str(folder / "edge-unicode.json")
        random_files = sorted(folder.glob("random-*.json"), key=lambda p: p.stat().st_size)
        real = [["simulate", edge, "--json"], ["simulate", edge]]
        real += [["simulate", str(p), "--json"] for p in random_files[:1] + random_files[-1:]]
        for argv_ in real:
            outs = [
                _subprocess_output(argv_, _variant_env(app)) for app in (args.baseline, args.this)
            ]
            if outs[0] != outs[1]:
                bad += 1
                print("differs as a subprocess:", argv_, file=sys.stderr)
        print(f"{len(cases)} commands in-process, {len(real)} as subprocesses: {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
