"""benchmarks/bench_concurrent_puts.py measures what it says: every writer's puts are
written in each mode, its history check finds every one of them, and a lost put stops
the run instead of giving a throughput.

Small runs on real files (a few writers, a few puts each); no time is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from bench_concurrent_puts import SHARED_KEYS, check_history, sgam_run, writer_puts

from sgam_store import SGAMStore

WRITERS, PUTS = 4, 6


def work() -> list[list[tuple]]:
    return [writer_puts(w, PUTS) for w in range(WRITERS)]


def test_writers_share_keys_and_each_put_is_a_new_text() -> None:
    puts = [put for writer in work() for put in writer]
    shared = {key for ns, key, _ in puts if ns == ("bench", "shared")}
    assert 1 < len(shared) <= SHARED_KEYS
    assert len({value["text"] for _, _, value in puts}) == len(puts)


@pytest.mark.parametrize("mode", ["threads", "tasks", "batch", "one"])
def test_every_mode_writes_every_put_as_a_version(mode: str, tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    assert sgam_run(path, work(), mode) > 0  # its own history check passed
    store = SGAMStore(path)
    try:
        versions = sum(
            len(store.history("bench", subject, key))
            for subject, key in {(ns[1], key) for w in work() for ns, key, _ in w}
        )
    finally:
        store.close()
    assert versions == WRITERS * PUTS


def test_a_lost_put_stops_the_run(tmp_path: Path) -> None:
    written = work()
    sgam_run(str(tmp_path / "c.db"), written, "one")
    store = SGAMStore(str(tmp_path / "c.db"))
    try:
        check_history(store, written)  # as written: passes
        extra = [*written[0], (("bench", "w0"), "k0", {"text": "never written", "n": -1})]
        with pytest.raises(SystemExit, match="lost puts"):
            check_history(store, [extra, *written[1:]])
    finally:
        store.close()
