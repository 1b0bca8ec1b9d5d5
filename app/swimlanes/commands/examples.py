"""``swimlanes examples [NAME] [-o OUT]``: list the shipped examples, print one, or write it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from swimlanes.model.io import write_text_atomic
from swimlanes.resources import capture_names, example_names, example_path
from swimlanes.services.errors import CommandError


def example_info(name: str) -> dict[str, Any]:
    """Name, lesson title, preferred device and op count of a shipped example."""
    path = example_path(name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CommandError(f"cannot read example {name}: {err}") from None
    return {
        "name": name,
        "lesson": str(data.get("lesson", "")),
        "device": str(data.get("device", "")),
        "ops": len(data.get("program", [])),
    }


def _list() -> None:
    infos = [example_info(n) for n in example_names()]
    captured = [example_info(n) for n in capture_names()]
    if not infos:
        raise CommandError("no examples are installed")
    width = max(len(i["name"]) for i in infos + captured) + 2
    for i in infos:
        print(f"{i['name']:<{width}}{i['lesson']}  [{i['device']}, {i['ops']} ops]")
    if captured:
        print("\nreal programs captured on an H200 (resources/programs), with their measurements:")
    for i in captured:
        print(f"{i['name']:<{width}}{i['lesson']}  [{i['device']}, {i['ops']} ops]")
    print(
        "\nshow one: swimlanes examples NAME    write it: swimlanes examples NAME -o FILE.json"
        "\nsimulate: swimlanes simulate FILE.json"
    )


def _target(output: str, name: str) -> Path:
    out = Path(output)
    return out / f"{name}.json" if out.is_dir() else out


def run(args: argparse.Namespace) -> int:
    if not args.name:
        if args.output:
            raise CommandError("-o needs an example NAME (see `swimlanes examples`)")
        _list()
        return 0
    names = example_names() + capture_names()
    if args.name not in names:
        raise CommandError(f"no example named {args.name!r}; choose one of {', '.join(names)}")
    text = example_path(args.name).read_text(encoding="utf-8")
    if not args.output:
        sys.stdout.write(text)
        return 0
    target = _target(args.output, args.name)
    try:
        write_text_atomic(target, text)
    except OSError as err:
        raise CommandError(f"cannot write {target}: {err.strerror or err}") from None
    print(f"wrote {target}", file=sys.stderr)
    return 0
