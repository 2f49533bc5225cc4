"""The quick-start demo runs offline on a SQLite file and answers the seed's questions."""

from __future__ import annotations

import json
import subprocess
import sys


def test_demo_json(tmp_path) -> None:
    db = str(tmp_path / "demo.db")
    for _ in range(2):  # rerunnable on the same file
        out = subprocess.run(
            [sys.executable, "-m", "sgam_store.cli", "demo", "--db", db, "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
    answers = {a["question"]: a["value"] for a in json.loads(out.stdout)["answers"]}
    assert answers["now"] == "2026-06-30"
    assert answers["on June 2"] == "2026-07-15"
    assert answers["on May 31"] == "2026-08-01"
    assert answers["now (tenant globex)"] == "2026-09-10"
