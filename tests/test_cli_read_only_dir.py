"""Read commands on a store in a directory nobody can write (issue 38, item 4): SQLite
reads a WAL-mode file through a -shm file it creates beside it, so a read-only open there
failed with an untyped "unable to open database file". On a read-only mount a file with no
write-ahead log is read as it is (`immutable`); one whose log needs its -shm is one typed
line naming --db. Root ignores a directory's permissions, so the tests bind-mount a
directory read-only (skipped where that is not allowed)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sgam_store import SGAMStore
from tests.test_cli_real import sgam

READS = [
    ["ledger"],
    ["get", "--tenant", "acme", "--subject", "mira", "--attribute", "city"],
    ["search", "--tenant", "acme", "Lima"],
    ["changes", "--since", "2000-01-01T00:00:00Z"],
    ["recall", "--tenant", "acme", "Where does Mira live?"],
    ["history", "--tenant", "acme", "--subject", "mira", "--attribute", "city"],
]


@pytest.fixture
def shelf(tmp_path) -> Iterator[tuple[Path, Path]]:
    """(where files are put, the same directory mounted read-only): the mount is made by
    `mount_read_only` once the files are in place, and undone after the test."""
    source, mounted = tmp_path / "source", tmp_path / "mounted"
    source.mkdir()
    mounted.mkdir()
    yield source, mounted
    subprocess.run(["umount", str(mounted)], capture_output=True, check=False)


def mount_read_only(source: Path, mounted: Path) -> None:
    for argv in (
        ["mount", "--bind", str(source), str(mounted)],
        ["mount", "-o", "remount,bind,ro", str(mounted)],
    ):
        if subprocess.run(argv, capture_output=True, check=False).returncode:
            pytest.skip("bind-mounting a directory read-only needs root")
    probe = mounted / "probe"
    with pytest.raises(OSError):
        probe.touch()  # the directory really is read-only


def files(where: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(where.iterdir())}


def write(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "city", {"value": "Lisbon"})
    store.put(("acme", "mira"), "city", {"value": "Lima"})


def test_a_store_on_a_read_only_mount_reads(shelf, monkeypatch, capsys) -> None:
    source, mounted = shelf
    with SGAMStore.from_conn_string(str(source / "memory.db")) as store:
        write(store)
    assert [p.name for p in source.iterdir()] == ["memory.db"]  # no -wal, no -shm left
    mount_read_only(source, mounted)
    before = files(mounted)
    db = str(mounted / "memory.db")
    for argv in READS:
        for json in ([], ["--json"]):
            status, out, err = sgam(monkeypatch, capsys, argv[0], "--db", db, *argv[1:], *json)
            assert status == 0 and err == "", (argv, err)
            assert "Lima" in out, argv
    assert files(mounted) == before


def test_a_log_that_needs_its_index_is_one_typed_line(shelf, monkeypatch, capsys) -> None:
    """A -wal file holds pages the file lacks: reading past it would answer from an old
    state, and reading it needs the -shm file SQLite cannot create there."""
    source, mounted = shelf
    live = source.parent / "live.db"
    with SGAMStore.from_conn_string(str(live)) as store:
        write(store)  # still in the write-ahead log while the store is open
        shutil.copy(live, source / "memory.db")
        shutil.copy(f"{live}-wal", source / "memory.db-wal")
    assert (source / "memory.db-wal").stat().st_size > 0
    mount_read_only(source, mounted)
    db = str(mounted / "memory.db")
    for argv in READS[:2]:
        status, out, err = sgam(monkeypatch, capsys, argv[0], "--db", db, *argv[1:])
        assert status == 2 and out == ""
        assert err.startswith(f"sgam: error: --db {db}: SQLite cannot read it here")
        assert "memory.db-shm" in err and err.count("\n") == 1, err
    assert sorted(files(mounted)) == ["memory.db", "memory.db-wal"]
