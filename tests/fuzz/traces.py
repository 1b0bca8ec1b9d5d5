"""Seeded fuzzer for trace import and ``swimlanes stats``: mutated traces, runs and timelines
must give a result or a clean refusal (``error: ...``, exit code 2), never a traceback or a hang.

Seeds: the shared PyTorch profiler (Kineto) traces, cut to a few hundred events; Chrome traces
of the shipped examples as Swimlanes exports them (simulated, and simulated beside measured);
the shipped measured runs and their bare timelines. Mutations work on the text (truncation,
changed characters, huge numbers, deep nesting, a cut gzip stream) and on the JSON values
(wrong types anywhere, missing keys, huge or negative numbers, NaN). Each case runs the
``stats`` command in this process; a result must also be self-consistent (see
:func:`check_stats`).

``fuzz_traces(count, seed)`` returns a description of each failure (empty: none).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import random
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from swimlanes.cli import main
from swimlanes.engine import simulate
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_names, example_path, measurements_dir
from swimlanes.timeline.formats.chrome_trace import timeline_to_chrome_trace
from swimlanes.timeline.formats.io import load_run

SHARED_TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
#: A case that takes longer than this is reported as a hang (and interrupted, where it can be).
HANG_S = 5.0
_KINETO_EVENTS = 300
_GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "cuda_runtime", "ac2g"}

HOSTILE: tuple[Any, ...] = (
    None, True, False, 0, -1, 1.5, -2.5e-9, 2**31, 2**63 - 1, 2**63, -(2**63), 2**64, 10**30,
    -(10**30), 1e300, -1e300, math.nan, math.inf, -math.inf, "", "x", "12", "NaN", "é\u2028",
    [], [0], [[0]], [None, 1], {}, {"a": 1}, {"id": [0]}, "z" * 5000,
)  # fmt: skip


# -- seeds -----------------------------------------------------------------------------------
@cache
def seed_documents() -> tuple[tuple[str, str], ...]:
    """(name, JSON text) of every seed."""
    seeds = [*_kineto_seeds(), *_export_seeds()]
    for path in sorted(measurements_dir().glob("*.json")):
        text = path.read_text(encoding="utf-8")
        seeds.append((f"run {path.stem}", text))
        timeline = json.loads(text).get("timeline")
        if isinstance(timeline, dict):
            seeds.append((f"timeline {path.stem}", json.dumps(timeline)))
    return tuple(seeds)


def _kineto_seeds() -> Iterator[tuple[str, str]]:
    for path in sorted(SHARED_TRACES.glob("*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        events = doc.get("traceEvents", [])
        gpu = [e for e in events if isinstance(e, dict) and e.get("cat") in _GPU_CATS]
        other = [e for e in events if not (isinstance(e, dict) and e.get("cat") in _GPU_CATS)]
        keep = gpu[: _KINETO_EVENTS * 4 // 5] + other[: _KINETO_EVENTS // 5]
        yield f"kineto {path.name}", json.dumps({**doc, "traceEvents": keep})


def _export_seeds() -> Iterator[tuple[str, str]]:
    for name in example_names():
        pipeline = load_pipeline(example_path(name))
        # a multi-GPU example runs on its own multi-GPU preset
        device = str(pipeline.extra["device"]) if pipeline.is_multi_device else "h200"
        simulated = simulate(pipeline, device)
        yield f"export {name}", json.dumps(timeline_to_chrome_trace([simulated]))
        run = measurements_dir() / f"{name}.h200.json"
        if run.is_file():
            both = timeline_to_chrome_trace([simulated, load_run(run)[0]])
            yield f"export {name} + measured", json.dumps(both)


# -- mutations -------------------------------------------------------------------------------
def _containers(doc: Any) -> list[Any]:
    """Every dict and list in ``doc``."""
    out, todo = [], [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, dict | list):
            out.append(node)
            todo.extend(node.values() if isinstance(node, dict) else node)
    return out


def _hostile(rng: random.Random) -> Any:
    return rng.choice(HOSTILE)


def mutate_value(rng: random.Random, text: str) -> tuple[str, str]:
    """Change the JSON values: a few random edits anywhere in the document."""
    doc = json.loads(text)
    done = []
    for _ in range(rng.randint(1, 3)):
        node = rng.choice(_containers(doc))
        if not node:
            continue
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        how = rng.random()
        if how < 0.15 and isinstance(node, dict):
            del node[key]
            done.append(f"del {key!r}")
            continue
        if how < 0.3 and type(node[key]) in (int, float):
            node[key] = rng.choice([-node[key] - 1, node[key] * 10 ** rng.randint(3, 30)])
        else:
            node[key] = _hostile(rng)
        done.append(f"{key!r}={str(node[key])[:20]}")
    return json.dumps(doc), "values " + ", ".join(done)


def mutate_text(rng: random.Random, text: str) -> tuple[str, str]:
    """Change the text: cut it, change characters, put in huge numbers or deep nesting."""
    at = rng.randrange(len(text))
    how = rng.randrange(6)
    if how == 0:
        return text[:at], f"cut at {at}"
    if how == 1:
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            chars[rng.randrange(len(chars))] = rng.choice('{}[]",:0-9eE.\\ \x00é')
        return "".join(chars), "characters changed"
    digit = next((i for i in range(at, len(text)) if text[i].isdigit()), None)
    if how in (2, 3) and digit is not None:
        huge = rng.choice(["9" * rng.choice([19, 20, 400, 4301, 20000]), "1e400", "-1e999",
                           "NaN", "Infinity", "-0.0e-999", "1" + "0" * 310 + ".5"])  # fmt: skip
        return text[:digit] + huge + text[digit:], f"number {huge[:12]}... at {digit}"
    if how == 4:
        depth = rng.choice([50, 1000, 100_000])
        nest = "[" * depth + ("]" * depth if rng.random() < 0.5 else "")
        return text[:at] + nest + text[at:], f"nesting {depth} at {at}"
    start = rng.randrange(len(text))
    return text[:start] + text[start : start + rng.randint(1, 200)] * 2 + text[start:], "repeat"


def _encode(rng: random.Random, text: str) -> tuple[bytes, str]:
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.7:
        return data, ""
    packed = gzip.compress(data, compresslevel=1)
    if rng.random() < 0.3:
        return packed[: rng.randrange(len(packed))], ", gzip cut"
    return packed, ", gzip"


# -- running ---------------------------------------------------------------------------------
class _Hang(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (only possible on the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: Any) -> None:
        raise _Hang()

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_stats(path: Path) -> tuple[int, str, str]:
    """``swimlanes stats --json PATH`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["stats", "--json", str(path)])
    return rc, out.getvalue(), err.getvalue()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} in the output")


def check_stats(stdout: str) -> str | None:
    """What is wrong with the JSON ``stats`` printed (None: nothing found)."""
    st = json.loads(stdout, parse_constant=_no_constant)
    for one in st["timelines"]:
        if one["ops"] != sum(s["ops"] for s in one["streams"]) + one["host_only_ops"]:
            return f"{one['name']}: stream ops do not add up to {one['ops']}"
        times = [one["makespan_us"], one["overlap"]["total_us"]]
        times += [s["busy_us"] for s in one["streams"]]
        times += [e["busy_us"] for e in one["engines"].values()]
        if min(times) < 0 or max(times[1:]) > one["makespan_us"] + 1e-3:
            return f"{one['name']}: a busy or overlap time outside 0..makespan"
    if {k: v for k, v in st.items() if k != "timelines"} != st["timelines"][0]:
        return "the top-level keys are not the first timeline's"
    return None


def _outcome(path: Path) -> str | None:
    """None for a result or a clean refusal, else what went wrong."""
    started = time.perf_counter()
    try:
        with _time_limit(HANG_S):
            rc, stdout, stderr = run_stats(path)
    except _Hang:
        return f"hang: no answer in {HANG_S} s"
    except Exception as err:  # noqa: BLE001 - any escape is the failure being looked for
        return f"{type(err).__name__}: {str(err)[:300]}"
    took = time.perf_counter() - started
    if took > HANG_S:
        return f"hang: {took:.1f} s"
    if rc == 2:
        ok = stderr.startswith("error: ") and "Traceback" not in stderr
        return None if ok else f"exit 2 without a clean message: {stderr[:300]!r}"
    if rc != 0:
        return f"exit code {rc}: {stderr[:300]!r}"
    try:
        return check_stats(stdout)
    except (ValueError, KeyError, TypeError, IndexError) as err:
        return f"bad JSON output: {type(err).__name__}: {err}"


def fuzz_traces(count: int, seed: int) -> list[str]:
    """Run ``count`` mutated seeds through ``swimlanes stats``; describe each failure."""
    rng = random.Random(seed)
    seeds = seed_documents()
    mutations: tuple[Callable[[random.Random, str], tuple[str, str]], ...] = (
        mutate_value,
        mutate_text,
    )
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "case.json"
        for case in range(count):
            name, text = rng.choice(seeds)
            text, how = rng.choice(mutations)(rng, text)
            data, packing = _encode(rng, text)
            path.write_bytes(data)
            problem = _outcome(path)
            if problem:
                failures.append(f"case {case} (seed {seed}, {name}, {how}{packing}): {problem}")
    return failures
