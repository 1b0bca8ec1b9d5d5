"""Every command, option and positional of the command line says what it does in --help, and an
option with a default names it."""

from __future__ import annotations

import argparse

import pytest

from swimlanes.cli import build_parser


def _walk(parser: argparse.ArgumentParser, where: str) -> list[tuple[str, argparse.Action]]:
    """(command path, action) for every argument of ``parser`` and of its subcommands."""
    found: list[tuple[str, argparse.Action]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a for a in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((f"{where} {name}", helps.get(name, action)))
                found.extend(_walk(sub, f"{where} {name}"))
        elif not isinstance(action, argparse._HelpAction):
            found.append((where, action))
    return found


def _name(action: argparse.Action) -> str:
    return "/".join(action.option_strings) or action.dest


ACTIONS = _walk(build_parser(), "swimlanes")


def test_the_walk_sees_every_command() -> None:
    commands = {where for where, _ in ACTIONS}
    for name in ("simulate", "export", "run", "compare", "calibrate", "schema", "codegen"):
        assert f"swimlanes {name}" in commands
    assert len(ACTIONS) >= 50


def test_every_command_option_and_positional_has_help() -> None:
    missing = [
        f"{where}: {_name(a)}"
        for where, a in ACTIONS
        if a.help is None or not str(a.help).strip() or a.help == argparse.SUPPRESS
    ]
    assert missing == [], "arguments without help=:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    "where, action",
    [
        (w, a)
        for w, a in ACTIONS
        if a.option_strings
        and a.default is not None
        and a.default != argparse.SUPPRESS
        and not isinstance(a, argparse._StoreTrueAction | argparse._VersionAction)
    ],
    ids=lambda v: v if isinstance(v, str) else _name(v),
)
def test_options_with_a_default_name_it(where: str, action: argparse.Action) -> None:
    assert "default" in str(action.help), f"{where} {_name(action)}: help does not say its default"


def _device_help(command: str) -> str:
    return next(
        str(a.help)
        for where, a in ACTIONS
        if where == f"swimlanes {command}" and "--device" in a.option_strings
    )


def test_device_help_says_each_commands_own_default() -> None:
    # simulate has only the pipeline: its device key, else h200; no measurement to go by.
    simulate = _device_help("simulate")
    assert "pipeline's device key" in simulate and "'h200'" in simulate
    assert "calibration" not in simulate
    # compare always has a measurement: the calibration of the host it came from first.
    compare = _device_help("compare")
    assert "default: the calibration of the host the measurement came from" in compare
    assert "with a warning" in compare and "--no-calibrate" in compare
    assert "pipeline's" not in compare
    # export: the measured host's calibration beside a measurement, else as simulate does.
    export = _device_help("export")
    assert "beside a measurement" in export and "calibration of the host" in export
    assert "otherwise the pipeline's device key" in export
    assert len({simulate, compare, export}) == 3
