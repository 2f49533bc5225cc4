"""Shared checks for the concurrency and crash tests: the ledger's invariants, read from
the database itself (a SQLite file or PostgreSQL), and "every acknowledged write is there".

Writers (threads here, or `tests/store_worker.py` subprocesses) report each write as an
*intent* before it starts and an *ack* after it committed, as JSON lines. Every value a
writer puts is unique (`"<writer> t<thread> n<seq>"`), so a value identifies its write.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import psycopg

from sgam_store import SGAMStore
from sgam_store.engines import is_postgres_target
from sgam_store.engines.sqlite import connection
from sgam_store.engines.sqlite.indexing import FACT_BITS

from .conftest import HashEmbeddings

DIMS = 16
ROOT = Path(__file__).resolve().parents[1]

# Every writer hammers the same few keys: (tenant, subject path...), attribute. Two tenants
# where one is a prefix of the other, a nested subject and a tenant-level key.
KEYS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("acme", "mira"), "deadline"),
    (("acme", "mira"), "city"),
    (("acme2", "mira"), "deadline"),
    (("acme", "mira", "docs"), "passport"),
    (("acme",), "plan"),
)


def index_config() -> dict[str, Any]:
    """The vector index every process opens the shared file with (same dims everywhere)."""
    return {"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": ["text"]}


def open_store(path: str, *, index: bool = True) -> SGAMStore:
    store = SGAMStore(path, index=index_config() if index else None)
    store.setup()
    return store


def split(ns: Iterable[str]) -> tuple[str, str]:
    ns = tuple(ns)
    return ns[0], ".".join(ns[1:])


# ------------------------------------------------------------------ the ledger's invariants


@dataclass
class LedgerStats:
    rows: int = 0
    facts: int = 0  # facts in the current belief (each key's history, summed)
    keys: int = 0
    values: dict[tuple[tuple[str, ...], str], list[str]] = field(default_factory=dict)


def check_file(path: str, *, index: bool = True) -> LedgerStats:
    """Open the database with a fresh connection and assert every invariant the design
    states (`path`: a SQLite file or a PostgreSQL URI).

    - SQLite: `PRAGMA integrity_check` is ok, and FTS5's own integrity check passes;
    - per key, at most one open fact in the current belief; believed intervals are
      ordered by valid_from, non-overlapping, and only the last may be open;
    - on every row, `valid_from < valid_to` and `known_from <= known_to` (the CHECKs);
    - a fact_id has at most one believed version;
    - every fact has its keyword row; with an index, the vector rows' current flag
      agrees with the ledger (current = believed and open).
    """
    if is_postgres_target(path):
        with psycopg.connect(path, autocommit=True) as conn:
            conn.execute("SET search_path TO sgam, public")
            stats = _check_ledger(conn)
            keyword = {r[0] for r in conn.execute("SELECT fact_id FROM fact_keywords")}
            facts = {r[0] for r in conn.execute("SELECT fact_id FROM facts")}
            assert keyword == facts, f"keyword rows out of step: {keyword ^ facts}"
            if index:
                _check_pg_vectors(conn)
            return stats
    conn = connection.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        conn.execute("INSERT INTO fact_fts (fact_fts) VALUES ('integrity-check')")
        stats = _check_ledger(conn)
        # One keyword row per fact, numbered in its tenant's slot.
        expected = {
            slot << FACT_BITS | fact_id
            for fact_id, slot in conn.execute(
                "SELECT DISTINCT f.fact_id, t.slot FROM facts f JOIN tenants t USING (tenant_id)"
            )
        }
        fts_ids = {r[0] for r in conn.execute("SELECT rowid FROM fact_fts")}
        assert len(expected) == len({r[0] for r in conn.execute("SELECT fact_id FROM facts")})
        assert expected == fts_ids, f"keyword rows out of step: {expected ^ fts_ids}"
        if index:
            _check_vectors(conn)
        return stats
    finally:
        conn.close()


def _check_ledger(conn: Any) -> LedgerStats:
    """The engine-neutral invariants, in SQL both engines run."""
    bad = conn.execute(
        "SELECT count(*) FROM facts WHERE (valid_to IS NOT NULL AND valid_from >= valid_to) "
        "OR (known_to IS NOT NULL AND known_from > known_to)"
    ).fetchone()[0]
    assert bad == 0, f"{bad} rows break the interval CHECKs"
    dup = conn.execute(
        "SELECT fact_id, count(*) FROM facts WHERE known_to IS NULL "
        "GROUP BY fact_id HAVING count(*) > 1"
    ).fetchall()
    assert dup == [], f"facts with several believed versions: {dup}"
    stats = LedgerStats(rows=conn.execute("SELECT count(*) FROM facts").fetchone()[0])
    rows = conn.execute(
        "SELECT namespace, attribute, valid_from, valid_to, value FROM facts "
        "WHERE known_to IS NULL ORDER BY namespace, attribute, valid_from"
    ).fetchall()
    by_key: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for ns, attr, start, end, value in rows:
        by_key[(ns, attr)].append((start, end, value))
    for key, hist in by_key.items():
        opened = [h for h in hist if h[1] is None]
        assert len(opened) <= 1, f"{key}: {len(opened)} open facts"
        assert all(h[1] is not None for h in hist[:-1]), f"{key}: open fact not last"
        for a, b in pairwise(hist):
            assert a[0] < b[0], f"{key}: two believed facts start at {a[0]}"
            assert a[1] <= b[0], f"{key}: {a[:2]} overlaps {b[:2]}"
        stats.values[(tuple(key[0].split(".")), key[1])] = [
            json.loads(h[2]).get("text") for h in hist
        ]
    stats.keys, stats.facts = len(by_key), len(rows)
    return stats


def _check_vectors(conn: Any) -> None:
    current = {
        r[0]
        for r in conn.execute(
            "SELECT fact_id FROM facts WHERE known_to IS NULL AND valid_to IS NULL"
        )
    }
    owners = {r[0] for r in conn.execute("SELECT fact_id FROM vector_rows")}
    facts = {r[0] for r in conn.execute("SELECT fact_id FROM facts")}
    assert owners <= facts, f"vectors of no fact: {sorted(owners - facts)}"
    assert current <= owners, "an open fact with text has no vector"


def _check_pg_vectors(conn: Any) -> None:
    current = {
        r[0]
        for r in conn.execute(
            "SELECT fact_id FROM facts WHERE known_to IS NULL AND valid_to IS NULL"
        )
    }
    flags = conn.execute("SELECT fact_id, is_current FROM fact_vectors").fetchall()
    wrong = {fid for fid, flag in flags if flag != (fid in current)}
    assert not wrong, f"is_current disagrees with the ledger for facts {sorted(wrong)}"
    assert current <= {fid for fid, _ in flags}, "an open fact with text has no vector"


# ------------------------------------------------------------------ acknowledged writes


@dataclass
class Journal:
    """What writers reported: intents, acks and errors, by write id."""

    intents: dict[str, dict[str, Any]] = field(default_factory=dict)
    acks: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # ack order, across writers
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def feed(self, line: str) -> dict[str, Any] | None:
        """Record one JSON line from a worker; a line cut short by SIGKILL is ignored
        (its write cannot have been acked: the ack is a later line)."""
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            return None
        self.record(msg)
        return msg

    def record(self, msg: dict[str, Any]) -> None:
        with self.lock:
            if "intent" in msg:
                self.intents[msg["intent"]] = msg
            elif "ack" in msg:
                self.acks[msg["ack"]] = msg
                self.order.append(msg["ack"])
            elif "error" in msg:
                self.errors.append(msg)

    @property
    def in_flight(self) -> list[str]:
        return [wid for wid in self.intents if wid not in self.acks]

    def values(self, wids: Iterable[str]) -> set[str]:
        return {
            item["value"]["text"]
            for wid in wids
            for item in self.intents[wid]["items"]
            if item.get("value") is not None
        }


def check_acknowledged(path: str, journal: Journal, extra: set[str] = frozenset()) -> LedgerStats:
    """Every acked write is in its key's history; in-flight writes are all-or-nothing;
    nothing else is there (besides `extra`, values the test itself wrote)."""
    stats = check_file(path)
    stored: dict[str, tuple[tuple[str, ...], str]] = {}
    for key, texts in stats.values.items():
        for text in texts:
            assert text not in stored, f"value {text!r} stored twice"
            stored[text] = key
    acked = journal.values(journal.acks)
    missing = acked - set(stored)
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {sorted(missing)[:5]}"
    for wid in journal.acks:
        for item in journal.intents[wid]["items"]:
            if item.get("value") is not None:
                text = item["value"]["text"]
                assert stored[text] == (tuple(item["ns"]), item["key"]), f"{text} moved keys"
    possible = set(acked) | set(extra)
    for wid in journal.in_flight:
        vals = journal.values([wid])
        present = vals & set(stored)
        assert present in (set(), vals), f"write {wid} half-applied: {present} of {vals}"
        possible |= vals
    unexpected = set(stored) - possible
    assert not unexpected, f"values nobody wrote: {sorted(unexpected)[:5]}"
    _check_fact_ids(path, journal)
    return stats


def _check_fact_ids(path: str, journal: Journal) -> None:
    """replace_fact acks carry the returned fact: it is believed, with its valid_from."""
    wanted = [
        (ack["fact"], journal.intents[wid]["items"][0])
        for wid, ack in journal.acks.items()
        if ack.get("fact")
    ]
    if not wanted:
        return
    with SGAMStore.from_conn_string(path) as store:
        by_key: dict[tuple, dict[int, Any]] = {}
        for fact, item in wanted:
            key = (*split(item["ns"]), item["key"])
            if key not in by_key:
                by_key[key] = {f.fact_id: f for f in store.history(*key)}
            got = by_key[key].get(fact["fact_id"])
            assert got is not None, f"acked fact {fact['fact_id']} not in history of {key}"
            assert got.value == item["value"] and got.valid_from.isoformat() == fact["valid_from"]


def check_writer_order(path: str, journal: Journal) -> int:
    """Each writer's puts to a key appear in its key's history in the order they were acked.

    Returns how many (writer, key) sequences were checked.
    """
    stats = check_file(path)
    position = {
        text: (key, i) for key, texts in stats.values.items() for i, text in enumerate(texts)
    }
    seqs: dict[tuple[str, tuple], list[int]] = defaultdict(list)
    for wid in journal.order:
        intent = journal.intents[wid]
        if intent["op"] not in ("put", "batch"):
            continue
        for item in intent["items"]:
            key, pos = position[item["value"]["text"]]
            seqs[(intent["writer"], key)].append(pos)
    for (writer, key), positions in seqs.items():
        assert positions == sorted(positions), f"{writer}'s puts to {key} reordered"
    return len(seqs)


# ------------------------------------------------------------------ worker processes


class Worker:
    """A `tests.store_worker` subprocess whose stdout is read into a Journal as it goes
    (a reader thread drains the pipe, so a chatty worker never blocks on a full pipe)."""

    def __init__(self, db: str, name: str, number: int, journal: Journal, *args: str) -> None:
        self.name, self.journal = name, journal
        self.acks = 0
        self.ready = threading.Event()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.store_worker", db, name, "--number", str(number), *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr = ""
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err.start()
        self._out.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = self.journal.feed(line)
            if msg and "ready" in msg:
                self.ready.set()
            elif msg and "ack" in msg:
                self.acks += 1

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def go(self) -> None:
        assert self.ready.wait(60), f"{self.name} never got ready: {self.stderr}"
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        """SIGKILL, then read every line it printed before dying."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._join()
        assert self.proc.returncode == -signal.SIGKILL, (self.proc.returncode, self.stderr)

    def finish(self, timeout: float = 120) -> None:
        self.proc.wait(timeout)
        self._join()
        assert self.proc.returncode == 0, f"{self.name} failed:\n{self.stderr}"

    def _join(self) -> None:
        self._out.join(30)
        self._err.join(30)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
