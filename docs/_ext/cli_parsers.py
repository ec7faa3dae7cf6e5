"""The parsers of ``sb3-ablation``'s sub-commands, for the CLI reference (sphinx-argparse's ``:func:``).

Each sub-command builds its parser inside its ``main`` (some from rl_zoo3's own parser), so the parser is captured the
way the command builds it: ``main`` runs with ``ArgumentParser.parse_args`` replaced by a function that hands the
parser back before anything is parsed or run. The reference is therefore the parser the command uses, not a copy.
"""

from __future__ import annotations

import argparse
import importlib

from sb3_ablation.cli import COMMANDS


class _Built(BaseException):  # a BaseException: the commands' own `except Exception` handlers let it through
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__()
        self.parser = parser


def _raise_built(self: argparse.ArgumentParser, args=None, namespace=None):
    raise _Built(self)


def command_parser(command: str) -> argparse.ArgumentParser:
    """The parser ``sb3-ablation <command>`` builds (``command``: a key of :data:`sb3_ablation.cli.COMMANDS`)."""
    module_name, function_name, _ = COMMANDS[command]
    main = getattr(importlib.import_module(module_name), function_name)
    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = _raise_built  # type: ignore[method-assign]
    try:
        main([])
    except _Built as built:
        return built.parser
    finally:
        argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]
    raise RuntimeError(f"sb3-ablation {command} did not build a parser")


def train() -> argparse.ArgumentParser:
    return command_parser("train")


def enjoy() -> argparse.ArgumentParser:
    return command_parser("enjoy")


def record_video() -> argparse.ArgumentParser:
    return command_parser("record-video")


def export() -> argparse.ArgumentParser:
    return command_parser("export")


def study() -> argparse.ArgumentParser:
    return command_parser("study")


def report() -> argparse.ArgumentParser:
    return command_parser("report")


def demo() -> argparse.ArgumentParser:
    return command_parser("demo")


def bench() -> argparse.ArgumentParser:
    return command_parser("bench")
