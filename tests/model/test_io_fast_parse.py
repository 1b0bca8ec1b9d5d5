"""Pipeline files read by orjson (when installed) load exactly as the json module reads them:
the same pipelines, and the same refusals, word for word."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from swimlanes.model import io
from swimlanes.model.io import load_pipeline
from swimlanes.model.validate import PipelineError
from swimlanes.resources import captures_dir, examples_dir

HEAD = '{"format": "swimlanes-pipeline", "version": 1, "streams": [{"name": "s0"}], "program": '
#: Op texts that the two parsers could read differently: literals past 64 bits or past the
#: float range, NaN, lone surrogates, escapes, deep nesting, odd whitespace, bad JSON.
ODD_OPS = [
    '{"op": "h2d", "stream": "s0", "bytes": 18446744073709551616}',
    '{"op": "h2d", "stream": "s0", "bytes": 9223372036854775808}',
    '{"op": "h2d", "stream": "s0", "bytes": -9223372036854775809}',
    '{"op": "h2d", "stream": "s0", "bytes": 1024, "x": 1e400}',
    '{"op": "h2d", "stream": "s0", "bytes": 1024, "x": NaN}',
    '{"op": "h2d", "stream": "s0", "bytes": 1024, "x": 0.1234567890123456789}',
    '{"op": "h2d", "stream": "s0", "bytes": 1024, "label": "\\ud800"}',
    '{"op": "h2d", "stream": "s0", "bytes": 1024, "label": "\\ud834\\udd1e caf\u00e9 \\" \\\\"}',
    '{"op": "h2d", "stream": "s0", "bytes": 1024, "x": ' + "[" * 65 + "]" * 65 + "}",
    '{"op": "h2d", "stream": "s0", "bytes": 1024, "x": ' + "[" * 63 + "]" * 63 + "}",
    '{"op": "h2d", "stream": "s0", "bytes": 1024, "x": "[[[[" }',
    '{"op": "kernel", "stream": "s0", "blocks": 1, "threads": 32, "duration_us": 2.5e-3}',
    '{"op": "kernel",\t"stream": "s0", "blocks": 1, "threads": 32, "duration_us": 1E2}',
    '{"op": "h2d", "stream": "s0", "bytes": 1024, "bytes": 2048}',
    '{"op": "h2d", "stream": "s0", "bytes": 1024,}',
    '{"op": "h2d", "stream": "s0", "bytes": 01}',
    '{"op": "h2d", "stream": "s0", "bytes": -0}',
]


def _outcome(path: Path) -> object:
    try:
        return load_pipeline(path)
    except PipelineError as err:
        return [str(p) for p in err.problems]


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    fast = _outcome(path)
    with monkeypatch.context() as m:
        m.setattr(io, "orjson", None)
        slow = _outcome(path)
    return fast, slow


@pytest.fixture(autouse=True)
def _needs_orjson() -> None:
    if io.orjson is None:
        pytest.skip("orjson is not installed: only the json module reads")


def test_shipped_pipelines_load_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = sorted(examples_dir().glob("*.json")) + sorted(captures_dir().glob("*.json"))
    assert paths
    for path in paths:
        fast, slow = _both(path, monkeypatch)
        assert fast == slow, path.name
        assert not isinstance(fast, list), path.name


def test_odd_literals_load_or_are_refused_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, op in enumerate(ODD_OPS):
        path = tmp_path / f"odd{k}.json"
        path.write_bytes((HEAD + "[" + op + "]}").encode("utf-8", "surrogatepass"))
        fast, slow = _both(path, monkeypatch)
        assert fast == slow, op
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + (HEAD + "[]}").encode())
    fast, slow = _both(tmp_path / "bom.json", monkeypatch)
    assert fast == slow and isinstance(fast, list)


def test_random_numbers_load_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    ops = []
    for _ in range(2000):
        digits = rng.randint(1, 17)
        duration = float(f"{rng.uniform(0.001, 999.0):.{digits}g}")
        ops.append({"op": "host", "duration_us": duration, "label": f"h{rng.random()!r}"})
        ops.append({"op": "h2d", "stream": "s0", "bytes": rng.randrange(1, 1 << 40)})
    path = tmp_path / "random.json"
    path.write_text(HEAD + json.dumps(ops) + "}")
    fast, slow = _both(path, monkeypatch)
    assert fast == slow and not isinstance(fast, list)
