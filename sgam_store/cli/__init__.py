"""The `sgam` command. Its tables and scenario files come with the `cli` extra, so a plain
install says how to get it instead of failing with a traceback."""

from __future__ import annotations

import sys
from collections.abc import Sequence

CLI_EXTRA = ("rich", "yaml")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        from sgam_store.cli.commands import main as run
    except ModuleNotFoundError as exc:
        if exc.name not in CLI_EXTRA:
            raise
        print(
            f"sgam: the command needs {exc.name}, from the cli extra: "
            "pip install 'sgam-store[cli]'",
            file=sys.stderr,
        )
        return 2
    return run(argv)
