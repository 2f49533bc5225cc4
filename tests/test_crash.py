"""Crashes: writer processes killed with SIGKILL mid-stream, round after round.

Each round starts two writer processes on the same file (`tests/store_worker.py`: one
with two threads on two connections, one with a single thread), lets them write the
shared keys (puts, atomic two-put batches, `replace_fact`, deletes) and kills both with
SIGKILL at random moments, one after the other, so that one dies while the other may be
waiting for or holding the write lock. A writer prints an *intent* before each write and
an *ack* after it returned (flushed to a pipe the test drains), so the test knows
exactly which writes were acknowledged and which were in flight at the kill.

After every kill round, on the file as the dead processes left it:
- `PRAGMA integrity_check` is ok, FTS5's integrity check passes, vec0's `is_current`
  flags agree with the ledger (`tests.reliability.check_file`);
- every write acknowledged so far, in this round or any earlier one, is in its key's
  history; a write in flight is all-or-nothing (a batch never half-applied); nothing
  nobody wrote is there;
- the interval invariants hold for every key;
- a fresh process-level store reopens the file, and can write and read it back.

The next round's writers are started while the current one is checked, so their
imports overlap the checks.

Also: a transaction that fails because the disk is full (a real SQLite limit,
`PRAGMA max_page_count`) reports that error, writes nothing, and the store recovers.

Budget (environment variables): SGAM_CRASH_ROUNDS (5 rounds, 2 kills each);
SGAM_CRASH_SEED (random by default; printed, to replay a failure). For a longer local
run: ``SGAM_CRASH_ROUNDS=100 .venv/bin/python -m pytest tests/test_crash.py -s``.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from .reliability import (
    KEYS,
    Journal,
    Worker,
    check_acknowledged,
    check_file,
    open_store,
    split,
)

ENGINES = ("sqlite", "postgres")  # tests that take `target` run on every engine

ROUNDS = int(os.environ.get("SGAM_CRASH_ROUNDS", "5"))
SEED = int(os.environ.get("SGAM_CRASH_SEED", str(random.randrange(1 << 30))))


def start_round(db: str, r: int, journal: Journal) -> list[Worker]:
    return [
        Worker(db, f"r{r}a", 2 * r + 1, journal, "--threads", "2", "--wait-go"),
        Worker(db, f"r{r}b", 2 * r + 2, journal, "--wait-go"),
    ]


def wait_for_acks(workers: list[Worker], wanted: list[int], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while any(w.acks < n for w, n in zip(workers, wanted, strict=True)):
        assert time.monotonic() < deadline, [(w.name, w.acks, w.stderr) for w in workers]
        time.sleep(0.002)


@pytest.mark.slow
def test_writers_killed_mid_stream_lose_no_acknowledged_write(target: str) -> None:
    print(f"\n[crash] SGAM_CRASH_SEED={SEED}")
    rng = random.Random(SEED)
    open_store(target).close()
    journal = Journal()
    markers: set[str] = set()
    kills = interrupted = interrupted_committed = 0
    upcoming = start_round(target, 0, journal)
    for r in range(ROUNDS):
        workers = upcoming
        for w in workers:
            assert w.ready.wait(120), w.stderr
        before = set(journal.in_flight)
        for w in workers:
            w.go()
        # Next round's imports overlap this round's writes and checks.
        upcoming = start_round(target, r + 1, journal) if r + 1 < ROUNDS else []
        wait_for_acks(workers, [rng.randint(1, 40) for _ in workers])
        time.sleep(rng.uniform(0, 0.03))
        for w in workers:
            w.kill()
            kills += 1
            time.sleep(rng.uniform(0, 0.03))  # the other one keeps writing meanwhile
        assert journal.errors == [], journal.errors[:3]

        stats = check_acknowledged(target, journal, extra=markers)
        stored = {t for texts in stats.values.values() for t in texts}
        for wid in set(journal.in_flight) - before:
            values = journal.values([wid])
            if values:
                interrupted += 1
                interrupted_committed += values <= stored

        # The file reopens and takes writes after the crash.
        marker = f"marker after round {r}"
        store = open_store(target)
        try:
            ns, key = KEYS[r % len(KEYS)]
            store.put(ns, key, {"text": marker})
            assert store.get(ns, key).value == {"text": marker}
            assert store.history(*split(ns), key)[-1].value == {"text": marker}
        finally:
            store.close()
        markers.add(marker)

    stats = check_acknowledged(target, journal, extra=markers)
    acked = len(journal.values(journal.acks))
    print(
        f"[crash] {kills} SIGKILLs over {ROUNDS} rounds survived: {len(journal.acks)} acked "
        f"writes ({acked} values), 0 lost; {interrupted} writes were in flight at a kill "
        f"({interrupted_committed} had committed, the rest left no trace); "
        f"{stats.facts} facts / {stats.rows} rows; integrity ok after every round"
    )
    assert kills == 2 * ROUNDS


def test_disk_full_reports_the_real_error_writes_nothing_and_recovers(db_path: str) -> None:
    """SQLite rolls a transaction back by itself on SQLITE_FULL; the engine must not
    then hide "database or disk is full" behind "cannot rollback - no transaction is
    active" (fixed in `SQLiteEngine.transaction`). The limit is real: max_page_count."""
    store = open_store(db_path)
    try:
        store.put(("acme", "mira"), "deadline", {"text": "before the disk filled"})
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages}")
        rows = store.conn.execute("SELECT count(*) FROM facts").fetchone()[0]
        for attempt in range(3):
            with pytest.raises(Exception, match="full") as info:
                store.put(("acme", "mira"), "deadline", {"text": "x" * 20_000 + str(attempt)})
            assert "no transaction is active" not in str(info.value)
            assert not store.conn.in_transaction
        assert store.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == rows
        store.conn.execute("PRAGMA max_page_count = 1073741823")
        store.put(("acme", "mira"), "deadline", {"text": "after the disk was freed"})
        assert store.get(("acme", "mira"), "deadline").value == {"text": "after the disk was freed"}
    finally:
        store.close()
    check_file(db_path)
