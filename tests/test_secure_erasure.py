"""Secure erasure, checked in bytes: after `purge(..., secure_delete=True)` no file the
database keeps (the file, its WAL, any side file) and no array of the vector mirror holds
what was erased, while the data that stays is still there, found by the same scan.

Rows are not enough: a deleted row's bytes stay in free pages, in unused space of live
pages, in old FTS5 segments and in the WAL until something overwrites them.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sgam_store import MemoryFact, SGAMStore
from sgam_store.core.models import PurgeReport
from sgam_store.write.supersession import Verdict
from tests.conftest import HashEmbeddings

KINDS = ("subject", "key", "episode", "tenant")
ACME, GLOBEX = "acme", "globex"
VERSIONS = 40  # of acme/mira's note, and of acme/otto's
LETTERS = "bcfhjkmnpqrtvwxz"  # no vowels: a stemmer leaves such words as they are


def _markers(rng: random.Random, n: int) -> list[str]:
    """Words found nowhere else. FTS5 stores a term after its neighbour's shared prefix,
    so the scan looks for each word's last 7 letters (`tail`), not the whole word."""
    return ["zq" + "".join(rng.choice(LETTERS) for _ in range(10)) for _ in range(n)]


def tail(marker: str) -> bytes:
    """A marker's last 7 letters (names such as "acme.mira" are looked for as they are)."""
    return marker[-7:].encode() if marker.startswith("zq") else marker.encode()


@dataclass
class Seeded:
    """Every marker written, by what it belongs to."""

    note: list[str]  # acme/mira/note, version i, sourced from episode ep{i // 10}
    tone: list[str]  # acme/mira/tone
    moved: str  # acme/mira/moved, sourced from ep0, reviewed against a note
    evidence: str  # quoted in the review decision's evidence
    episodes: list[str]  # ep0..ep3's text
    otto: list[str]  # acme/otto/note: the other subject
    otto_episode: str
    globex: list[str]  # globex/mira/note: the other tenant
    globex_episode: str
    vectors: dict[str, bytes] = field(default_factory=dict)  # marker -> its stored vector

    def erased(self, kind: str) -> list[str]:
        """The markers a secure purge of this kind must leave nowhere."""
        return {
            "subject": [*self.note, *self.tone, self.moved, self.evidence, "acme.mira"],
            "key": [*self.note, self.evidence],
            "episode": [*self.note[:10], self.moved, self.evidence, self.episodes[0]],
            "tenant": [*self.note, *self.tone, self.moved, self.evidence, *self.episodes,
                       *self.otto, self.otto_episode, ACME],
        }[kind]  # fmt: skip

    def kept(self, kind: str) -> list[str]:
        """Markers that must still be there: the scan reads the data that stays."""
        other_tenant = [*self.globex, self.globex_episode, "globex.mira"]
        return {
            "subject": [*self.otto, *self.episodes, *other_tenant],
            "key": [*self.tone, self.moved, *self.otto, *self.episodes, *other_tenant],
            "episode": [*self.note[10:], *self.tone, *self.otto, *self.episodes[1:],
                        *other_tenant],
            "tenant": other_tenant,
        }[kind]  # fmt: skip


def _fact(tenant: str, subject: str, attribute: str, text: str, day: int, ep: str) -> MemoryFact:
    return MemoryFact(
        tenant_id=tenant, subject=subject, attribute=attribute, value={"text": text},
        valid_from=f"2026-0{1 + day // 28}-{1 + day % 28:02d}T09:00:00Z", source_episode_id=ep,
    )  # fmt: skip


def seed(store: SGAMStore) -> Seeded:
    rng = random.Random(29)
    s = Seeded(
        note=_markers(rng, VERSIONS), tone=_markers(rng, 5), moved=_markers(rng, 1)[0],
        evidence=_markers(rng, 1)[0], episodes=_markers(rng, 4), otto=_markers(rng, VERSIONS),
        otto_episode=_markers(rng, 1)[0], globex=_markers(rng, 10),
        globex_episode=_markers(rng, 1)[0],
    )  # fmt: skip
    for k, word in enumerate(s.episodes):
        store.record_episode(ACME, f"Mira said {word}", source_kind="user_message",
                             episode_id=f"ep{k}")  # fmt: skip
    store.record_episode(ACME, f"Otto said {s.otto_episode}", source_kind="user_message",
                         episode_id="epo")  # fmt: skip
    store.record_episode(GLOBEX, f"Mira at globex said {s.globex_episode}",
                         source_kind="user_message", episode_id="epg")  # fmt: skip
    for i, word in enumerate(s.note):
        store.replace_fact(_fact(ACME, "mira", "note", f"{word} note {i}", i, f"ep{i // 10}"))
    for i, word in enumerate(s.tone):
        store.replace_fact(_fact(ACME, "mira", "tone", f"{word} tone {i}", i, "ep1"))
    for i, word in enumerate(s.otto):
        store.replace_fact(_fact(ACME, "otto", "note", f"{word} note {i}", i, "epo"))
    for i, word in enumerate(s.globex):
        store.replace_fact(_fact(GLOBEX, "mira", "note", f"{word} note {i}", i, "epg"))
    old = store.fact_at(ACME, "mira", "note")
    new = store.replace_fact(_fact(ACME, "mira", "moved", f"{s.moved} moved", 50, "ep0"))
    assert old is not None
    verdict = Verdict(old.fact_id, "independent", "a different thing",
                      evidence={"quote": f"{s.evidence} said"})  # fmt: skip
    store.apply_supersession(new.fact_id, [verdict], decided_by="test")
    return s


def _purge(store: SGAMStore, kind: str) -> PurgeReport:
    if kind == "subject":
        return store.purge(ACME, "mira", secure_delete=True)
    if kind == "key":
        return store.purge(ACME, "mira", "note", secure_delete=True)
    if kind == "episode":
        return store.purge_episode(ACME, "ep0", secure_delete=True)
    return store.purge(ACME, secure_delete=True)


def files_of(directory: Path) -> dict[str, bytes]:
    """Every file in the database's directory, as bytes."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def copies(files: dict[str, bytes], words: list[str]) -> dict[str, int]:
    """How many times each word's tail occurs across the files (words found only)."""
    found = {w: sum(data.count(tail(w)) for data in files.values()) for w in words}
    return {w: n for w, n in found.items() if n}


@pytest.fixture(params=["indexed", "plain"])
def sqlite_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SGAMStore]:
    """A store in its own directory, with an index (vectors, a mirror) or without."""
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    path = str(tmp_path / "db" / "m.db")
    os.makedirs(os.path.dirname(path))
    with SGAMStore.from_conn_string(
        path, index=index if request.param == "indexed" else None
    ) as store:
        store.setup()
        yield store


@pytest.mark.parametrize("kind", KINDS)
def test_secure_purge_leaves_no_byte_of_the_erased_data(sqlite_store: SGAMStore, kind: str) -> None:
    s = seed(sqlite_store)
    if sqlite_store._cache is not None:  # and statistics, which sample index keys
        sqlite_store.conn.execute("ANALYZE")
    directory = Path(sqlite_store.conn.execute("PRAGMA database_list").fetchone()[2]).parent
    _capture_vectors(sqlite_store, s)
    before = files_of(directory)
    assert set(copies(before, s.erased(kind))) == set(s.erased(kind))  # all there before
    _purge(sqlite_store, kind)
    after = files_of(directory)
    assert copies(after, s.erased(kind)) == {}, sorted(after)
    assert set(copies(after, s.kept(kind))) == set(s.kept(kind))
    blobs = [s.vectors[w] for w in s.erased(kind) if w in s.vectors]
    left = [b for b in blobs if any(b in data for data in after.values())]
    assert left == []
    kept = [s.vectors[w] for w in s.kept(kind) if w in s.vectors]
    assert all(any(b in data for data in after.values()) for b in kept)


def test_a_reader_in_another_connection_defers_the_scrub_to_vacuum(tmp_path: Path) -> None:
    """A read transaction elsewhere keeps the WAL (which then holds the rebuilt pages
    and the old ones) from being copied back and truncated: the purge says so, and
    `vacuum()` finishes once the reader is gone."""
    from sgam_store.engines.sqlite import connection

    with SGAMStore.from_conn_string(str(tmp_path / "m.db")) as store:
        store.setup()
        s = seed(store)
        reader = connection.connect(str(tmp_path / "m.db"))
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM facts").fetchone()
        report = _purge(store, "subject")
        assert report.checkpointed is False
        assert copies(files_of(tmp_path), s.erased("subject"))  # still there, as reported
        reader.execute("COMMIT")
        reader.close()
        store.vacuum()
        assert copies(files_of(tmp_path), s.erased("subject")) == {}
        assert set(copies(files_of(tmp_path), s.kept("subject"))) == set(s.kept("subject"))


def _capture_vectors(store: SGAMStore, s: Seeded) -> None:
    """Each marker's stored vector, read before the purge (with an index only)."""
    rows = store.conn.execute(
        "SELECT json_extract(f.value, '$.text'), v.embedding FROM vector_rows v "
        "JOIN facts f ON f.fact_id = v.fact_id"
    ).fetchall()
    for text, blob in rows:
        s.vectors[text.split()[0]] = blob


# ---------------------------------------------------------------- the int8 mirror


def _mirror_files(directory: Path) -> list[int]:
    """Descriptors of this process's open, unlinked files in `directory`: int8's exact
    rows (made with O_TMPFILE where the kernel has it, so nameless)."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(f"{directory}/") and target.endswith(" (deleted)"):
            out.append(int(fd))
    return out


def _unit(blob: bytes) -> np.ndarray:
    v = np.frombuffer(blob, dtype=np.float32)
    return v / np.linalg.norm(v)


def _best_cosine(rows: np.ndarray, vectors: list[np.ndarray]) -> list[float]:
    """For each vector, its highest cosine with any row (zero rows score 0)."""
    norms = np.linalg.norm(rows, axis=1)
    unit = rows / np.where(norms > 0, norms, 1)[:, None]
    return [float((unit @ v).max()) if len(unit) else 0.0 for v in vectors]


def _current_words(store: SGAMStore) -> set[str]:
    rows = store.conn.execute(
        "SELECT json_extract(value, '$.text') FROM facts "
        "WHERE valid_to IS NULL AND known_to IS NULL"
    )
    return {text.split()[0] for (text,) in rows}


def _exact_rows(directory: Path) -> np.ndarray:
    """The int8 mirror's exact rows, read through this process's descriptor."""
    fds = _mirror_files(directory)
    assert len(fds) == 1
    raw = os.pread(fds[0], os.fstat(fds[0]).st_size, 0)
    return np.frombuffer(raw, dtype=np.float32).reshape(-1, 64)


def _mirror_rows(store: SGAMStore) -> np.ndarray:
    """Every row of every block of the mirror, spare capacity included, decoded."""
    cache = store._cache
    assert cache is not None and cache.blocks is not None
    blocks = cache.blocks.values()
    return np.concatenate(
        [b.matrix.astype(np.float32) * (1 if b.scale is None else b.scale[:, None]) for b in blocks]
    )


@pytest.mark.parametrize("encoding", ["float32", "int8"])
@pytest.mark.parametrize("kind", KINDS)
def test_secure_purge_scrubs_the_vector_mirror(tmp_path: Path, kind: str, encoding: str) -> None:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    path = str(tmp_path / "m.db")
    with SGAMStore.from_conn_string(
        path, index=index, retrieval={"vector_mirror": encoding}
    ) as store:
        store.setup()
        s = seed(store)
        _capture_vectors(store, s)
        assert store.search((ACME,), query="note")  # builds the mirror
        _purge(store, kind)
        erased = [_unit(s.vectors[w]) for w in s.erased(kind) if w in s.vectors]
        current = _current_words(store)
        kept = [_unit(s.vectors[w]) for w in s.kept(kind) if w in s.vectors and w in current]
        assert kept  # the mirror holds only current vectors: some of those must stay
        if encoding == "int8":
            exact = _exact_rows(tmp_path)
            assert max(_best_cosine(exact, erased)) < 0.99
            assert min(_best_cosine(exact, kept)) > 0.999  # the file read is the mirror's
        in_memory = _mirror_rows(store)
        assert max(_best_cosine(in_memory, erased)) < 0.99
        assert min(_best_cosine(in_memory, kept)) > 0.99
        found = store.search((ACME,), query=f"{s.otto[-1]} note", limit=3)
        if kind != "tenant":  # the mirror still answers, from what stays
            assert found and found[0].value["text"].startswith(s.otto[-1])


# ---------------------------------------------------------------- PostgreSQL


def _relations(conn: Any) -> list[str]:
    """Every relation of the store's schema (the one `facts` is in) with pages of its
    own: tables, their indexes, their TOAST tables and those tables' indexes."""
    rows = conn.execute(
        "WITH schema AS (SELECT relnamespace FROM pg_class WHERE relname = 'facts' "
        "  AND relkind = 'r'), "
        "ours AS (SELECT c.oid FROM pg_class c JOIN schema USING (relnamespace) "
        "  WHERE c.relkind IN ('r', 'i')), "
        "toast AS (SELECT c.reltoastrelid AS oid FROM pg_class c JOIN ours USING (oid) "
        "  WHERE c.reltoastrelid <> 0) "
        "SELECT oid::regclass::text FROM ours UNION SELECT oid::regclass::text FROM toast "
        "UNION SELECT i.indexrelid::regclass::text FROM pg_index i JOIN toast t "
        "  ON i.indrelid = t.oid"
    ).fetchall()
    return sorted(r[0] for r in rows)


def _pages(uri: str) -> dict[str, bytes]:
    """Every block of every relation of the store, as pageinspect reads it (through
    shared buffers: what the server would write to its files), by relation."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        out = {}
        for rel in _relations(conn):
            blocks = conn.execute(
                "SELECT get_raw_page(%s, b) FROM generate_series(0, "
                "(pg_relation_size(%s::regclass) / current_setting('block_size')::int) - 1) b",
                (rel, rel),
            ).fetchall()
            out[rel] = b"".join(bytes(b[0]) for b in blocks)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_secure_purge_on_postgres_leaves_no_page_with_the_erased_data(
    pg_server: str, kind: str
) -> None:
    from tests import pg

    uri = pg.fresh_database()
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    embed = HashEmbeddings(64)
    with SGAMStore.from_conn_string(uri, index=index) as store:
        store.setup()
        s = seed(store)
        _superuser(uri, "ANALYZE")  # as autovacuum would: sampled values go to pg_statistic
        before = _pages(uri)
        assert set(copies(before, s.erased(kind))) == set(s.erased(kind))
        report = _purge(store, kind)
        assert report.checkpointed is True
        after = _pages(uri)
    where = {rel: len(copies({rel: data}, s.erased(kind))) for rel, data in after.items()}
    assert copies(after, s.erased(kind)) == {}, {rel: n for rel, n in where.items() if n}
    assert set(copies(after, s.kept(kind))) == set(s.kept(kind))
    erased = [_float32(embed, w) for w in s.erased(kind)]
    assert not [v for v in erased if any(v in data for data in after.values())]
    # The database's files themselves, catalogs included, once a checkpoint wrote them.
    files = _database_files(uri)
    if files is not None:  # a server on this machine (the embedded one)
        where = {name: len(copies({name: data}, s.erased(kind))) for name, data in files.items()}
        assert copies(files, s.erased(kind)) == {}, {f: n for f, n in where.items() if n}
        assert set(copies(files, s.kept(kind))) == set(s.kept(kind))


def _superuser(uri: str, statement: str) -> Any:
    """Run one statement as the test server's superuser; its first row, if any."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        cur = conn.execute(statement)
        return cur.fetchone() if cur.description else None


def _database_files(uri: str) -> dict[str, bytes] | None:
    """Every file of the database's directory (base/<oid>) after a CHECKPOINT, or None
    when the server's data directory is not readable from here."""
    _superuser(uri, "CHECKPOINT")
    directory = _superuser(
        uri,
        "SELECT current_setting('data_directory') || '/base/' || oid FROM pg_database "
        "WHERE datname = current_database()",
    )[0]
    if not os.access(directory, os.R_OK):
        return None
    return files_of(Path(directory))


def _float32(embed: HashEmbeddings, text: str) -> bytes:
    return np.asarray(embed.embed_query(text), dtype=np.float32).tobytes()
