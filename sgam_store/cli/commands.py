"""The `sgam` command line: each subcommand maps to one library call, named in its help.

argparse lists the commands from their parsers, so the list in `sgam --help` cannot miss
one. Errors print as one line on stderr with exit status 2; `--json` gives machine output.
Output that is not a terminal (a pipe, a log, a notebook's `!sgam`) is plain text at a
fixed width (see `make_console`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from sgam_store.cli.changes import add_changes_command
from sgam_store.cli.common import PIPE_WIDTH, console, existing_store
from sgam_store.cli.lifecycle import add_lifecycle_commands
from sgam_store.cli.mcp import add_mcp_command
from sgam_store.cli.read import add_inspection_commands, add_read_commands, score_text
from sgam_store.cli.replay import LONG_REPLAY, add_demo_command, add_replay_command
from sgam_store.cli.transfer import add_transfer_commands
from sgam_store.cli.ui import add_ui_command
from sgam_store.core.errors import SGAMError

# Names other modules and tests import from here, where they lived before the split.
__all__ = [
    "LONG_REPLAY",
    "PIPE_WIDTH",
    "build_parser",
    "console",
    "existing_store",
    "main",
    "score_text",
]

DESCRIPTION = (
    "Memory as typed facts with validity intervals: each command is one library call. "
    "Errors are one line on stderr with exit status 2; --json gives machine output."
)


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line like the commands' own: the flag, what
    it expected and what it got (the usage is in --help). Subcommands' parsers are of it
    too (argparse makes them of the parent's class)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


class UsageError(Exception):
    """A command line argparse refused: `main` prints it and returns 2, as for any error."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="sgam", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    add_demo_command(sub)
    add_replay_command(sub)
    add_inspection_commands(sub)
    add_read_commands(sub)
    add_lifecycle_commands(sub)
    add_transfer_commands(sub)
    add_ui_command(sub)
    add_changes_command(sub)
    add_mcp_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
        return status
    except BrokenPipeError:
        return reader_went_away()
    except RecursionError:  # the library's decoder, on a value deeper than any SQLite takes
        print(
            "sgam: error: a stored value is nested deeper than Python's JSON decoder can read",
            file=sys.stderr,
        )
        return 2
    except (SGAMError, ValueError, OSError) as exc:
        print(f"sgam: error: {' '.join(str(exc).split())}", file=sys.stderr)  # one line
        return 2


def reader_went_away() -> int:
    """`sgam ... | head` after head has read enough: stop quietly, as standard tools do.
    stdout now points at /dev/null, so the interpreter's own flush at exit finds no broken
    pipe to report; the status is the shell's for a process ended by SIGPIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + 13  # SIGPIPE
