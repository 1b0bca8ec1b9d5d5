"""A seeded fuzzer for pipeline files through ``swimlanes simulate FILE --json``.

``fuzz_pipeline(count, seed)`` makes ``count`` hostile pipeline files from the shipped examples
(resources/examples/*.json) and from random pipelines (swimlanes.model.generators), mutated

* as JSON values: any key of the document, a stream or an op set to a huge, negative, zero,
  fractional, NaN or infinite number, a huge integer literal, a bool, null, an empty, long or
  numeric string, a list, an object or a deeply nested value; keys deleted or added; streams
  and ops duplicated (duplicate names), multiplied (many streams, many ops) or retyped;
* as text: truncated, a character inserted or deleted, a number literal made huge, the whole
  document nested deep, a byte order mark, UTF-16, gzip, stray bytes, a duplicate key;

runs the command line's simulate path in-process on each (``swimlanes.cli.main``, sometimes
with ``--device``) and reports every outcome that is neither a clean refusal (exit 2, only
``error: ...`` lines) nor a sane result (exit 0, one JSON object whose times are >= 0, each op
ending after it starts, the makespan at least every op's end and at least the busy time of
each stream, whose device ops never overlap). A case that takes more than ``HANG_SECONDS`` is
reported as a hang. Each case is reproducible from (seed, index) alone.

Run it alone with ``python tests/fuzz/pipeline.py [COUNT] [SEED]`` (one JSON line), or
``python tests/fuzz/pipeline.py --case SEED INDEX`` to write that case's file and run it.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import random
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swimlanes.cli import main as cli_main
from swimlanes.model.generators import random_multi_device_pipeline, random_pipeline

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "resources" / "examples"
#: A case slower than this is a hang.
HANG_SECONDS = 5.0
DEVICES = ("ideal", "h200", "a100", "rtx4090", "c1060", "c2050", "k20c")
#: Presets of several GPUs, for multi-device cases.
MULTI_DEVICES = ("2x-h200-nvlink", "4x-h200-nvlink", "8x-h200-nvlink", "2x-h200-pcie")

# Placeholders json.dumps cannot write itself (it recurses, and Python will not print integers
# past 4300 digits): replaced in the text afterwards.
_DEEP = "\x00deep:{}\x00"
_DIGITS = "\x00digits:{}\x00"
_PLACEHOLDER = re.compile(r'"\\u0000(deep|digits):(\d+)\\u0000"')

#: Values a fuzzed key may get (the placeholders become text after json.dumps).
HOSTILE_VALUES: tuple[Any, ...] = (
    0, -1, 1, 2, 7, 1024, 1025, 4096, 2**31 - 1, 2**31, 2**53 + 1, 2**62, 2**63 - 1, 2**63,
    -(2**63) - 1, 10**20, 10**400, _DIGITS.format(4301), _DIGITS.format(20000),
    0.5, -0.0, 1e-320, 1e9, 1e9 + 1, 9e15, 1e16, 1e300, 1e308, math.nan, math.inf, -math.inf,
    True, False, None, "", " ", "x" * 300, "x" * 5000, "1024", "default", "kernel", "s1", "e0",
    "pinned", "\u0000", "\udcff", "\u2028é" * 200, "../../etc/passwd", [], [1], [[[]]], {},
    {"a": 1}, {"op": "kernel"}, _DEEP.format(990), _DEEP.format(65), _DEEP.format(64),
)  # fmt: skip
#: Values at and near the limits that pass validation, per key: they reach the simulator.
EXTREMES: dict[str, tuple[Any, ...]] = {
    "duration_us": (1e9, 999_999_999.5, 5e8, 1e-9, 0.0004, 1, 0),
    "block_us": (1e-3, 0.5, 465.66, 1e9),
    "bytes": (2**40, 2**40 - 1, 2**32, 1, 3),
    "blocks": (2**31 - 1, 10**8, 4_000_000, 264 * 4096, 10**6, 1, 3),
    "threads": (1, 33, 1024),
    "blocks_per_sm": (1, 3, 2048),
    "flops": (1e15, 1e-300, 1.0),
    "priority": (-(2**31), 2**31 - 1, -5, 5, 0),
    "host_memory": ("pageable", "pinned"),
    "async": (False, True),
}
_EXTREME_KEYS: dict[str, tuple[str, ...]] = {
    "h2d": ("bytes", "duration_us", "host_memory", "async"),
    "d2h": ("bytes", "duration_us", "host_memory", "async"),
    "d2d": ("bytes", "duration_us", "async"),
    "memset": ("bytes", "duration_us", "async"),
    "kernel": ("blocks", "threads", "duration_us", "block_us", "flops", "blocks_per_sm"),
    "host": ("duration_us",),
    "host_func": ("duration_us",),
    "malloc": ("bytes",),
}
#: Keys worth adding where they do not belong.
KEYS: tuple[str, ...] = (
    "op", "stream", "label", "bytes", "host_memory", "async", "duration_us", "blocks", "threads",
    "block_us", "flops", "event", "blocks_per_sm", "name", "kind", "priority", "device",
    "format", "version", "streams", "program", "description", "lesson", "x_unknown",
)  # fmt: skip


@dataclass
class Failure:
    """One case whose outcome was neither a clean refusal nor a sane result."""

    index: int
    kind: str  # exception, exit, hang, result
    detail: str
    mutations: list[str]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "kind": self.kind,
            "detail": self.detail[:500],
            "mutations": self.mutations,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class FuzzReport:
    count: int
    seed: int
    outcomes: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    slowest: float = 0.0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "fuzz": "pipeline",
            "count": self.count,
            "seed": self.seed,
            "outcomes": dict(self.outcomes),
            "failures": [f.to_json() for f in self.failures],
            "slowest_case_s": round(self.slowest, 3),
            "seconds": round(self.seconds, 3),
        }


# -- making cases ------------------------------------------------------------------------------
def _sources() -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(EXAMPLES.glob("*.json"))]


def _base(rng: random.Random, examples: list[dict[str, Any]]) -> dict[str, Any]:
    if examples and rng.random() < 0.6:
        return json.loads(json.dumps(rng.choice(examples)))
    if rng.random() < 0.25:  # devices, communicators, peer copies and collectives
        n_ops, n_devices = rng.randint(1, 40), rng.randint(2, 4)
        multi = random_multi_device_pipeline(n_ops, n_devices, seed=rng.randrange(1 << 30))
        return multi.to_dict()
    doc = random_pipeline(rng.randint(1, 60), rng.randint(1, 6), seed=rng.randrange(1 << 30))
    return doc.to_dict()


def _slots(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in ``doc``, iteratively (a mutated document may be deep)."""
    out: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack and len(out) < 20000:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            out.append((node, k))
            if isinstance(v, dict | list):
                stack.append(v)
    return out


def _hostile(rng: random.Random) -> Any:
    value = rng.choice(HOSTILE_VALUES)
    return json.loads(json.dumps(value)) if isinstance(value, list | dict) else value


def _mutate_value(rng: random.Random, doc: dict[str, Any]) -> str:
    """One JSON-value mutation of ``doc`` (in place); what it did."""
    program = doc.get("program") if isinstance(doc.get("program"), list) else None
    streams = doc.get("streams") if isinstance(doc.get("streams"), list) else None
    choice = rng.random()
    if choice < 0.3 and (program or streams):
        return _extreme(rng, program or [], streams or [])
    choice = rng.random()
    if choice < 0.08 and program:
        op = rng.choice(program)
        k = rng.choice([2, 10, 500, 3000])
        at = rng.randrange(len(program) + 1)
        program[at:at] = [json.loads(json.dumps(op)) for _ in range(k)]
        return f"ops x{k}"
    if choice < 0.14 and streams is not None:
        k = rng.choice([1, 2, 1024, 1025, 3000])
        if streams and rng.random() < 0.5:
            streams.extend(json.loads(json.dumps(rng.choice(streams))) for _ in range(k))
            return f"duplicate stream x{k}"
        streams.extend({"name": f"z{i}", "kind": "blocking"} for i in range(k))
        return f"streams +{k}"
    if choice < 0.2 and program:
        op = rng.choice(program)
        if isinstance(op, dict):
            op["op"] = rng.choice(
                ["h2d", "d2h", "d2d", "memset", "kernel", "event_record", "event_wait",
                 "event_sync", "stream_sync", "device_sync", "host", "host_func", "malloc",
                 "free", "launch", 3]
            )  # fmt: skip
            return f"retype op to {op['op']!r}"
    slots = _slots(doc)
    if not slots:
        doc[rng.choice(KEYS)] = _hostile(rng)
        return "add key to empty"
    container, key = rng.choice(slots)
    if choice < 0.35 and isinstance(container, dict):
        del container[key]
        return f"delete {key!r}"
    if choice < 0.5:
        target = container[key] if isinstance(container[key], dict) else container
        if isinstance(target, dict):
            new_key = rng.choice(KEYS)
            target[new_key] = _hostile(rng)
            return f"set {new_key!r}"
    value = _hostile(rng)
    container[key] = value
    return f"replace {key!r} with {_brief(value)}"


def _extreme(rng: random.Random, program: list, streams: list) -> str:
    """A value at or near a limit, in a key the op (or stream) takes: valid, so simulated."""
    if streams and (not program or rng.random() < 0.15):
        stream = rng.choice(streams)
        if isinstance(stream, dict):
            stream["priority"] = rng.choice(EXTREMES["priority"])
            return f"priority {stream['priority']}"
        return "no stream"
    ops = [
        op
        for op in program
        if isinstance(op, dict) and isinstance(op.get("op"), str) and op["op"] in _EXTREME_KEYS
    ]
    if not ops:
        return "no op"
    op = rng.choice(ops)
    key = rng.choice(_EXTREME_KEYS[op["op"]])
    if op["op"] == "kernel" and key in ("duration_us", "block_us", "flops"):
        for timing in ("duration_us", "block_us", "flops", "bytes"):
            op.pop(timing, None)  # a kernel takes exactly one timing
    op[key] = rng.choice(EXTREMES[key])
    return f"{op['op']}.{key} = {op[key]!r}"


def _brief(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 64 else "huge int"
    return text if len(text) <= 40 else text[:40] + "..."


def _text(doc: Any) -> str:
    text = json.dumps(doc, allow_nan=True)

    def expand(m: re.Match[str]) -> str:
        n = int(m.group(2))
        return "[" * n + "]" * n if m.group(1) == "deep" else "9" * n

    return _PLACEHOLDER.sub(expand, text)


def _mutate_text(rng: random.Random, text: str) -> tuple[bytes, str]:
    """One text-level mutation; the file's bytes and what it did."""
    choice = rng.random()
    if choice < 0.12:
        at = rng.randrange(len(text) + 1)
        return text[:at].encode(), f"truncate at {at}"
    if choice < 0.24:
        at = rng.randrange(len(text) + 1)
        ch = rng.choice('{}[]",:-+.eE0123456789 \\\x00')
        return (text[:at] + ch + text[at:]).encode("utf-8", "surrogatepass"), f"insert {ch!r}"
    if choice < 0.32 and text:
        at = rng.randrange(len(text))
        return (text[:at] + text[at + 1 :]).encode("utf-8", "surrogatepass"), f"delete at {at}"
    if choice < 0.5:
        numbers = list(re.finditer(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", text))
        if numbers:
            m = rng.choice(numbers)
            huge = rng.choice(["9" * 4301, "9" * 400, "1e999", "-1e999", "1" + "0" * 19, "-0"])
            return (text[: m.start()] + huge + text[m.end() :]).encode(), "huge literal"
    if choice < 0.58:
        n = rng.choice([2, 63, 990, 100_000])
        return ("[" * n + text + "]" * n).encode(), f"nest whole x{n}"
    if choice < 0.66:
        return rng.choice([b"\xef\xbb\xbf", b"\xff\xfe", b"\x00", b"\x1f\x8b"]) + text.encode(
            "utf-8", "surrogatepass"
        ), "prefix bytes"
    if choice < 0.74:
        return gzip.compress(text.encode("utf-8", "surrogatepass")), "gzip"
    if choice < 0.8:
        return text.encode("utf-16"), "utf-16"
    if choice < 0.88 and text.startswith("{"):
        dup = rng.choice(['"version": 2, ', '"program": 5, ', '"streams": {}, ', '"format": 1, '])
        return ("{" + dup + text[1:]).encode("utf-8", "surrogatepass"), "duplicate key"
    raw = bytearray(text.encode("utf-8", "surrogatepass"))
    for _ in range(rng.randint(1, 4)):
        if raw:
            raw[rng.randrange(len(raw))] = rng.randrange(256)
    return bytes(raw), "stray bytes"


def make_case(seed: int, index: int, examples: list[dict[str, Any]] | None = None) -> tuple[
    bytes, list[str], list[str]
]:  # fmt: skip
    """Case ``index`` of ``seed``: the file's bytes, the mutations, and extra CLI arguments."""
    rng = random.Random(seed * 1_000_003 + index)
    doc = _base(rng, _sources() if examples is None else examples)
    mutations = [_mutate_value(rng, doc) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
    text = _text(doc)
    if rng.random() < 0.3:
        data, what = _mutate_text(rng, text)
        mutations.append(what)
    else:
        data = text.encode("utf-8", "surrogatepass")
    devices = doc.get("devices")
    if isinstance(devices, list) and rng.random() < 0.8:  # mostly a preset with enough GPUs
        fits = [name for name in MULTI_DEVICES if int(name[0]) >= len(devices)]
        args = ["--device", rng.choice(fits or MULTI_DEVICES)]
    else:
        args = ["--device", rng.choice(DEVICES)] if rng.random() < 0.3 else []
    return data, mutations, args


# -- running cases ---------------------------------------------------------------------------
def run_cli(path: Path, args: list[str]) -> tuple[int | None, str, str, BaseException | None]:
    """``swimlanes simulate PATH --json ARGS`` in-process: (exit code, stdout, stderr, the
    exception that escaped main, if one did)."""
    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    raised: BaseException | None = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(["simulate", str(path), "--json", *args])
        except (Exception, SystemExit, RecursionError, MemoryError) as exc:  # noqa: BLE001
            raised = exc
    return code, out.getvalue(), err.getvalue(), raised


def check_result(data: dict[str, Any]) -> str | None:
    """What is wrong with a simulation's JSON (None: nothing found)."""
    makespan = data.get("makespan_us")
    if not isinstance(makespan, int | float) or not math.isfinite(makespan) or makespan < 0:
        return f"makespan_us is {makespan!r}"
    tol = 1e-3 + 1e-12 * makespan  # the JSON rounds to 3 decimals of a microsecond
    last: dict[Any, float] = {}
    busy: Counter = Counter()
    for row in data["ops"]:
        times = [row.get(k) for k in ("issue_us", "issue_end_us", "start_us", "end_us")]
        for name, t in zip(("issue", "issue_end", "start", "end"), times, strict=True):
            if t is not None and (not math.isfinite(t) or t < -tol):
                return f"op {row['index']}: {name} {t}"
            if t is not None and t > makespan + tol:
                return f"op {row['index']}: {name} {t} after the makespan {makespan}"
        issue, issue_end, start, end = times
        if issue is not None and issue_end is not None and issue_end < issue - tol:
            return f"op {row['index']}: its call ends before it starts"
        if (start is None) != (end is None):
            return f"op {row['index']}: start {start}, end {end}"
        if start is None:
            continue
        if end < start - tol:
            return f"op {row['index']}: ends at {end} before its start {start}"
        stream = row.get("stream")
        if stream is not None:  # a stream's ops run one after another, in program order
            if start < last.get(stream, 0.0) - tol:
                return f"op {row['index']} starts at {start} before its stream's previous end"
            last[stream] = end
            busy[stream] += end - start
    for stream, total in busy.items():
        if total > makespan + tol * (1 + len(data["ops"])):
            return f"stream {stream!r} is busy {total} us, more than the makespan {makespan}"
    return None


def run_case(path: Path, args: list[str]) -> tuple[str, str, float]:
    """(outcome, detail, seconds): outcome simulated / refused, or a failure kind."""
    t0 = time.perf_counter()
    code, out, err, raised = run_cli(path, args)
    seconds = time.perf_counter() - t0
    if raised is not None:
        return "exception", f"{type(raised).__name__}: {raised}"[:500], seconds
    if seconds > HANG_SECONDS:
        return "hang", f"{seconds:.1f} s (exit {code})", seconds
    if code == 2:
        lines = err.splitlines()
        if (
            out
            or not lines
            or "Traceback" in err
            or not all(line.startswith("error: ") for line in lines)
        ):
            return "exit", f"exit 2 but stdout {out[:100]!r}, stderr {err[:300]!r}", seconds
        return "refused", lines[0], seconds
    if code != 0:
        return "exit", f"exit {code}: {err[:300]!r}", seconds
    try:
        data = json.loads(out)
    except ValueError as exc:
        return "result", f"stdout is not one JSON object: {exc}", seconds
    problem = check_result(data)
    return ("result", problem, seconds) if problem else ("simulated", "", seconds)


def fuzz_pipeline(count: int, seed: int) -> FuzzReport:
    """Run ``count`` fuzzed cases of ``seed``; the report lists every failure."""
    report = FuzzReport(count, seed)
    examples = _sources()
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-pipeline-") as folder:
        path = Path(folder) / "case.json"
        for index in range(count):
            data, mutations, args = make_case(seed, index, examples)
            path.write_bytes(data)
            outcome, detail, seconds = run_case(path, args)
            report.outcomes[outcome] += 1
            report.slowest = max(report.slowest, seconds)
            if outcome not in ("simulated", "refused"):
                report.failures.append(
                    Failure(index, outcome, detail, [*mutations, *args], seconds)
                )
    report.seconds = time.perf_counter() - t_all
    return report


def main(argv: list[str]) -> int:
    if argv[:1] == ["--case"]:
        seed, index = int(argv[1]), int(argv[2])
        data, mutations, args = make_case(seed, index)
        path = Path(f"fuzz-case-{seed}-{index}.json")
        path.write_bytes(data)
        outcome, detail, seconds = run_case(path, args)
        print(json.dumps({"file": str(path), "args": args, "mutations": mutations,
                          "outcome": outcome, "detail": detail, "seconds": seconds}))  # fmt: skip
        return 0
    count = int(argv[0]) if argv else 300
    seed = int(argv[1]) if len(argv) > 1 else 1
    report = fuzz_pipeline(count, seed)
    print(json.dumps(report.to_json()))
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
