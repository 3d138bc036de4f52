"""Every command's --help is written for the terminal: every option and argument described, no reStructuredText
markup in a description (the module docstrings serve both the API docs and the help)."""

from __future__ import annotations

import argparse

import pytest

from phyprobe.cli import SUBCOMMANDS, build_parser


def _parsers(parser: argparse.ArgumentParser, path: list[str]):
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, [*path, name])


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_option_is_described_and_no_markup_is_shown(command):
    top = build_parser(command)
    (sub,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    for path, parser in _parsers(sub.choices[command], [command]):
        assert "``" not in (parser.description or "") and ":mod:`" not in (parser.description or ""), path
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            assert action.help, f"phyprobe {path}: {action.option_strings or action.dest} has no help text"
