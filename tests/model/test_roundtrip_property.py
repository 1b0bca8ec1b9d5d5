"""Property: any valid document survives load -> save -> load unchanged."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swimlanes.model import pipeline_from_dict, pipeline_from_json, pipeline_to_json, validate
from swimlanes.model.document import MAX_BLOCKS, MAX_DURATION_US

_NAMES = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12
).filter(lambda s: s.strip() != "" and s != "default")
_EXTRA_KEYS = st.sampled_from(["note", "color", "x_tool", "layout"])
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
_POS_INT = st.integers(1, 2**36)
_POS_NUM = st.floats(min_value=0.001, max_value=1e7, allow_nan=False) | st.integers(1, 10**6)


@st.composite
def _op(draw: st.DrawFn, streams: list[str]) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["h2d", "d2h", "d2d", "memset", "kernel", "event_record", "event_wait",
             "event_sync", "stream_sync", "device_sync", "host", "host_func", "malloc", "free"]
        )
    )  # fmt: skip
    op: dict[str, Any] = {"op": kind}
    takes_stream = kind not in ("event_sync", "device_sync", "host", "malloc", "free")
    if takes_stream and draw(st.booleans()):
        op["stream"] = draw(st.sampled_from([*streams, "default"]))
    if draw(st.booleans()):
        op["label"] = draw(st.text(max_size=10))
    if kind in ("h2d", "d2h", "d2d", "memset"):
        op["bytes"] = draw(_POS_INT)
        if kind in ("h2d", "d2h") and draw(st.booleans()):
            op["host_memory"] = draw(st.sampled_from(["pinned", "pageable"]))
        if draw(st.booleans()):
            op["async"] = draw(st.booleans())
        if draw(st.booleans()):
            op["duration_us"] = draw(_POS_NUM)
    elif kind == "kernel":
        op["blocks"] = draw(st.integers(1, MAX_BLOCKS))
        op["threads"] = draw(st.integers(1, 1024))
        timing = draw(st.sampled_from(["block_us", "duration_us", "roofline"]))
        if timing == "roofline":
            op["flops"] = draw(_POS_NUM)
            op["bytes"] = draw(_POS_INT)
        elif timing == "block_us":  # the blocks' total time is bounded too
            # A hair under the limit: blocks * (limit / blocks) can round to just above it.
            longest = min(1e7, MAX_DURATION_US / op["blocks"]) * (1 - 1e-12)
            op["block_us"] = draw(st.floats(min_value=longest / 1e4, max_value=longest))
        else:
            op[timing] = draw(_POS_NUM)
    elif kind in ("event_record", "event_wait", "event_sync"):
        op["event"] = draw(st.sampled_from(["e0", "e1", "ready A"]))
    elif kind == "host":
        op["duration_us"] = draw(st.floats(min_value=0, max_value=1e6) | st.just(0))
    elif kind == "host_func" and draw(st.booleans()):
        op["duration_us"] = draw(_POS_NUM)
    elif kind == "malloc" and draw(st.booleans()):
        op["bytes"] = draw(_POS_INT)
    if draw(st.booleans()):
        op[draw(_EXTRA_KEYS)] = draw(_JSON_VALUES)
    return op


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(_NAMES, max_size=4, unique=True))
    streams = []
    for name in names:
        s: dict[str, Any] = {"name": name}
        if draw(st.booleans()):
            s["kind"] = draw(st.sampled_from(["per_thread_default", "blocking", "non_blocking"]))
        if draw(st.booleans()):
            s["priority"] = draw(st.integers(-10, 10))
        if draw(st.booleans()):
            s[draw(_EXTRA_KEYS)] = draw(_JSON_VALUES)
        streams.append(s)
    doc: dict[str, Any] = {
        "format": "swimlanes-pipeline",
        "version": 1,
        "name": draw(st.text(max_size=20)),
        "streams": streams,
        "program": draw(st.lists(_op(names), max_size=12)),
    }
    if draw(st.booleans()):
        doc["description"] = draw(st.text(max_size=30))
    return doc


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_valid_documents_round_trip_losslessly(doc: dict[str, Any]) -> None:
    first = pipeline_from_dict(json.loads(json.dumps(doc)))
    assert validate(first) == []
    text = pipeline_to_json(first)
    second = pipeline_from_json(text)
    assert second == first
    assert pipeline_to_json(second) == text
    # Keys the file had (known or not) are exactly the keys saved, apart from stream defaults.
    saved = json.loads(text)
    assert [set(op) for op in saved["program"]] == [set(op) for op in doc["program"]]
    assert {k: v for k, v in saved.items() if k not in ("streams", "name")} == {
        k: v for k, v in doc.items() if k not in ("streams", "name")
    }
