"""The --json writer: the same document as json.dumps, readable, rows one per line."""

from __future__ import annotations

import json

from swimlanes.services.json_text import json_text


def test_json_text_parses_back_to_the_document_with_one_row_per_line() -> None:
    doc = {
        "device": "h200",
        "makespan_us": 12.5,
        "metrics": {"overlap": 0.5, "busy": {"H2D": 1.0}},
        "ops": [{"index": 0, "label": 'K "a"', "end_us": 1.0}, {"index": 1, "end_us": None}],
        "insights": [],
        "tags": ["a", "b"],
    }
    text = json_text(doc)
    assert json.loads(text) == doc
    lines = text.splitlines()
    assert '    {"index": 0, "label": "K \\"a\\"", "end_us": 1.0},' in lines
    assert '    {"index": 1, "end_us": null}' in lines
    assert lines[0] == "{" and lines[-1] == "}"
    assert json_text({}) == "{}"
