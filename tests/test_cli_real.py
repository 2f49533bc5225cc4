"""The CLI on real rows (issue 38, item 4): a store of the shapes agents write
(`sgam_store.testing.realistic`: uuid keys, `msg:<uuid>` sources, kilobyte values, a key
of 525 versions, hostile names), in both layouts, beside the demo's replay file. Tables
keep their value column at 80, 100 and 120 columns; --json is one record per fact with
`Fact`'s names and the stored time form; errors are one line naming the flag."""

from __future__ import annotations

import io
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from sgam_store import Fact, SGAMStore, cli
from sgam_store.cli import common
from sgam_store.read.embeddings import local_available
from sgam_store.testing.realistic import Realistic, build

STORED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
READABLE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z")
FACT_FIELDS = set(Fact.model_fields)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Realistic]:
    """One generated store per layout, a few thousand facts, built once for the module."""
    where = tmp_path_factory.mktemp("real")
    return {
        layout: build(str(where / f"{layout}.db"), layout=layout, facts=2000)
        for layout in ("sgam", "langmem")
    }


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> str:
    db = str(tmp_path_factory.mktemp("demo") / "sgam-replay.db")
    assert cli.main(["replay", "--db", db, "--baseline", "keyword", "--json"]) == 0
    return db


def sgam(monkeypatch, capsys, *argv: str, width: int = 120) -> tuple[int, str, str]:
    """`sgam` in-process on a console `width` columns wide; (status, stdout, stderr)."""
    screen = io.StringIO()
    monkeypatch.setattr(common, "console", Console(file=screen, width=width, color_system=None))
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, screen.getvalue() + captured.out, captured.err


def key_args(key: tuple[tuple[str, ...], str], tenant_at: int) -> list[str]:
    """--tenant/--subject/--attribute of a (namespace, key) as the generator names it."""
    namespace, attribute = key
    tenant = namespace[tenant_at]
    subject = ".".join((*namespace[:tenant_at], *namespace[tenant_at + 1 :]))
    return ["--tenant", tenant, "--subject", subject, "--attribute", attribute]


def column_width(out: str, header: str) -> int:
    """How wide a table's column is: from its header to the next header (or line end)."""
    line = next(line for line in out.splitlines() if re.search(rf"(^| ){header}( |$)", line))
    start = re.search(rf"(^| ){header}( |$)", line).start() + (line[0] == " " or 0)
    start = line.index(header, start)
    rest = re.search(r" \S", line[start + len(header) :])
    return len(line) - start if rest is None else len(header) + rest.start() + 1


# ---------------------------------------------------------------- tables


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize("layout", ["sgam", "langmem"])
def test_a_ledger_keeps_its_value_column(stores, monkeypatch, capsys, layout, width) -> None:
    """msg:<uuid> sources and uuid keys: rich's own fit dropped the value at 120 columns."""
    real = stores[layout]
    tenant = real.long_memory[0][real.tenant_at]
    status, out, err = sgam(
        monkeypatch, capsys, "ledger", "--db", real.path, "--tenant", tenant, width=width
    )
    assert status == 0, err
    assert max(map(len, out.splitlines())) <= width
    assert column_width(out, "value") >= (24 if width >= 100 else 16)
    with SGAMStore.from_conn_string(real.path, read_only=True) as store:
        newest = store.ledger(tenant)[-1]
    assert "msg:" in out or "external:" in out  # the sources are there, cut if need be
    value = newest.value["content"] if isinstance(newest.value, dict) else newest.value
    assert str(value).split()[0] in out


@pytest.mark.parametrize("width", [80, 120])
def test_changes_never_squeezes_its_valid_column(stores, monkeypatch, capsys, width) -> None:
    real = stores["sgam"]
    argv = ["changes", "--db", real.path, "--since", "2000-01-01T00:00:00Z", "--limit", "40"]
    status, out, err = sgam(monkeypatch, capsys, *argv, "--tenant", real.big_tenant, width=width)
    assert status == 0, err
    assert max(map(len, out.splitlines())) <= width
    assert column_width(out, "value") >= (24 if width >= 100 else 16)
    assert column_width(out, "valid") >= 11  # a date whole; "2026 / -12- / 06" was the bug
    if width >= 120:  # each change's valid interval starts with a whole instant
        assert len(list(READABLE.finditer(out))) >= 40


def test_the_key_of_525_versions_reads_at_100_columns(stores, monkeypatch, capsys) -> None:
    real = stores["sgam"]
    argv = ["history", "--db", real.path, *key_args(real.deep_key, real.tenant_at)]
    status, out, err = sgam(monkeypatch, capsys, *argv, width=100)
    assert status == 0, err
    assert column_width(out, "said") >= 16  # the episode's text, beside the values
    rows = [line for line in out.splitlines() if re.match(r"#\d+ .*\d{4}-\d\d-\d\dT", line)]
    assert len(rows) == real.deep_versions
    assert READABLE.search(out) and ".000000Z" not in out  # times read to the second


def test_a_long_memory_is_cut_in_a_listing_and_whole_in_get(stores, monkeypatch, capsys) -> None:
    real = stores["langmem"]
    key = key_args(real.long_memory, real.tenant_at)
    _, listing, _ = sgam(monkeypatch, capsys, "ledger", "--db", real.path, *key[:2])
    assert re.search(r"… \(\+[\d,]+ characters\)", listing.replace("\n", " "))
    status, out, _ = sgam(monkeypatch, capsys, "get", "--db", real.path, *key, width=200)
    assert status == 0 and "characters)" not in out
    assert '{"content":' not in out  # LangMem's content shows as its text


def test_the_demo_file_reads_as_before_with_readable_times(demo, monkeypatch, capsys) -> None:
    status, out, _ = sgam(monkeypatch, capsys, "ledger", "--db", demo, width=100)
    assert status == 0 and "6 facts" in out
    assert re.search(r"#5 ← #2 +mira\.passport_deadline +2026-06-30 +2026-06-03T10:00:00Z", out)
    status, out, _ = sgam(monkeypatch, capsys, "ledger", "--db", demo, "--tenant", "globex")
    assert status == 0 and ": 1 fact\n" in out


# ---------------------------------------------------------------- --json


def records(out: str) -> list[dict]:
    data = json.loads(out)
    return data if isinstance(data, list) else [data]


@pytest.mark.parametrize("layout", ["sgam", "langmem"])
def test_every_command_prints_one_record_shape_per_fact(
    stores, demo, monkeypatch, capsys, layout
) -> None:
    real = stores[layout]
    key = key_args(real.long_memory, real.tenant_at)
    with SGAMStore.from_conn_string(real.path, read_only=True) as store:
        fact = store.fact_at(key[1], key[3], key[5])
    word = (fact.value["content"] if isinstance(fact.value, dict) else str(fact.value)).split()[0]
    outputs = {
        "get": ["get", *key],
        "history": ["history", *key],
        "ledger": ["ledger", *key],
        "timeline": ["timeline", *key],
        "search": ["search", word, *key[:4]],
    }
    for name, argv in outputs.items():
        status, out, err = sgam(
            monkeypatch, capsys, argv[0], "--db", real.path, *argv[1:], "--json"
        )
        assert status == 0, (name, err)
        for record in records(out):
            extra = {"said", "score"} & set(record)
            assert set(record) - extra == FACT_FIELDS, name
            assert record["tenant_id"] == key[1], name
            assert name == "search" or record["attribute"] == key[5], name
            for field in ("valid_from", "recorded_at", "known_from", "created_at"):
                assert STORED.match(record[field]), (name, field, record[field])
    _, out, _ = sgam(monkeypatch, capsys, "changes", "--db", real.path, "--since",
                     "2000-01-01T00:00:00Z", "--limit", "5", "--json")  # fmt: skip
    for change in json.loads(out):
        assert {
            "tenant_id",
            "subject",
            "attribute",
            "source_episode_id",
            "supersedes_fact_id",
        } <= set(change)
        assert STORED.match(change["at"]) and STORED.match(change["valid_from"])
    _, out, _ = sgam(monkeypatch, capsys, "replay", "--db", str(Path(demo).with_name("r.db")),
                     "--baseline", "keyword", "--json")  # fmt: skip
    for record in json.loads(out)["ledger"]:
        assert set(record) == FACT_FIELDS and STORED.match(record["valid_from"])


# ---------------------------------------------------------------- words and errors


def test_one_is_singular(demo, monkeypatch, capsys) -> None:
    _, out, _ = sgam(monkeypatch, capsys, "ledger", "--db", demo, "--tenant", "globex")
    assert "1 fact\n" in out and "1 facts" not in out
    argv = ["search", "--db", demo, "--tenant", "globex", "passport"]
    _, out, _ = sgam(monkeypatch, capsys, *argv)
    assert "1 result for" in out and "1 results" not in out


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["search", "x", "--limit", "-3"], "argument --limit: expected a whole number from 1"),
        (["search", "x", "--limit", "99999999999999999999"], "argument --limit: expected"),
        (["changes", "--since", "2026-01-01T00:00:00Z", "--limit", "0"], "argument --limit"),
        (["search", "x", "--filter", "{bad"], "argument --filter: expected a JSON object"),
        (["search", "x", "--filter", "[1]"], "argument --filter: expected a JSON object"),
        (["search", "x", "--filter", '{"value": {"$nope": 1}}'], "--filter: Unknown filter"),
        (["ledger", "--tenant", "nosuch"], "--tenant nosuch: no such tenant"),
        (["ledger", "--tenant", "ACME-TRAVEL"], "did you mean --tenant acme-travel?"),
    ],
)
def test_errors_are_one_line_naming_the_flag(stores, monkeypatch, capsys, argv, says) -> None:
    real = stores["sgam"]
    tenant = [] if argv[0] != "search" else ["--tenant", real.big_tenant]
    status, _, err = sgam(monkeypatch, capsys, argv[0], "--db", real.path, *tenant, *argv[1:])
    assert status == 2 and err.count("\n") == 1, err
    assert says in err and "offset" not in err and "Traceback" not in err
    if "no such tenant" in says:
        assert "tenants: " in err and "acme-travel" in err


def test_a_directory_or_a_typo_in_db_names_the_flag(tmp_path, monkeypatch, capsys) -> None:
    for db, says in ((tmp_path, "a directory"), (tmp_path / "typo.db", "no database at")):
        status, _, err = sgam(monkeypatch, capsys, "ledger", "--db", str(db))
        assert status == 2 and err.startswith(f"sgam: error: --db {db}: {says}")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- values and files


def test_a_value_nested_a_thousand_deep_does_not_break_a_listing(
    tmp_path, monkeypatch, capsys
) -> None:
    """Written before the store capped nesting: SQLite's JSON holds 1,000 levels, and
    Python's decoder stopped at its recursion limit, with a traceback."""
    db = str(tmp_path / "deep.db")
    with SGAMStore.from_conn_string(db) as store:
        store.put(("acme", "mira"), "deep", {"v": 1})
        store.put(("acme", "mira"), "deep", {"v": 2})
    deep = '{"v": ' + "[" * 998 + "]" * 998 + "}"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE facts SET value = ? WHERE fact_id = 1", (deep,))
    conn.commit()
    conn.close()
    for argv in (["ledger"], ["changes", "--since", "2000-01-01T00:00:00Z"]):
        status, out, err = sgam(monkeypatch, capsys, argv[0], "--db", db, *argv[1:])
        assert status == 0 and "Traceback" not in err, err
        assert "[[[[" in out and "(+1," in out  # cut: 240 characters of 2,005
    status, out, err = sgam(monkeypatch, capsys, "ledger", "--db", db, "--json")
    assert status == 0 and out.count("[") > 998, err


def test_a_failed_import_leaves_no_file(tmp_path, monkeypatch, capsys) -> None:
    source = tmp_path / "foreign.db"
    conn = sqlite3.connect(source)
    conn.execute("CREATE TABLE notes (x)")
    conn.close()
    target = tmp_path / "new.db"
    status, _, err = sgam(monkeypatch, capsys, "import", "--from", str(source), "--db", str(target))
    assert status == 2 and err.count("\n") == 1
    assert not target.exists() and not Path(f"{target}-wal").exists()


def test_an_sgam_file_imports_its_current_memories(demo, tmp_path, monkeypatch, capsys) -> None:
    """`sgam import --from <SGAM file>` brings over what `store.search()` sees now: the
    items and the layout (history stays behind: `sgam embed` keeps it, below)."""
    target = str(tmp_path / "current.db")
    status, out, err = sgam(monkeypatch, capsys, "import", "--from", demo, "--db", target, "--json")
    assert status == 0, err
    assert json.loads(out)["written"] == 3
    with SGAMStore.from_conn_string(target, read_only=True) as store:
        fact = store.fact_at("acme", "mira", "passport_deadline")
    assert fact.value == {"value": "2026-06-30"}
    assert fact.source_episode_id == "import:sgam-replay.db"


def readings(monkeypatch, capsys, db: str) -> list[str]:
    """What the read commands say of the demo's file, as --json: every version with both
    clocks, each key's history with its episode, and the change feed."""
    key = ["--tenant", "acme", "--subject", "mira", "--attribute", "passport_deadline"]
    return [
        sgam(monkeypatch, capsys, *argv, "--db", db, "--json")[1]
        for argv in (["ledger"], ["history", *key], ["changes", "--since", "2000-01-01T00:00:00Z"])
    ]


@pytest.mark.skipif(not local_available(), reason="needs the local extra (MiniLM)")
def test_embedding_an_sgam_file_gives_it_vectors_and_keeps_its_history(
    demo, tmp_path, monkeypatch, capsys
) -> None:
    """The advice of `search --embedding local` on a file without vectors, followed: `sgam
    embed` on a copy; every version, episode and change reads the same afterwards."""
    db = str(tmp_path / "embedded.db")
    shutil.copy(demo, db)
    search = ["search", "--tenant", "acme", "passport", "--embedding", "local", "--db", db]
    status, _, err = sgam(monkeypatch, capsys, *search)
    assert status == 0 and f"sgam embed --db {db} --embedding local" in err
    before = readings(monkeypatch, capsys, db)
    status, out, err = sgam(monkeypatch, capsys, "embed", "--db", db, "--embedding", "local")
    assert status == 0, err
    with SGAMStore.from_conn_string(db, read_only=True) as store:
        assert store.stats()["rows"]["vector_rows"] == store.stats()["rows"]["believed_rows"]
    assert readings(monkeypatch, capsys, db) == before
    status, out, err = sgam(monkeypatch, capsys, *search, "--mode", "vector")
    assert status == 0 and err == "", err
    assert "passport_deadline" in out and "(vector search)" in out
    status, out, _ = sgam(monkeypatch, capsys, "embed", "--db", db)  # --embedding local: default
    assert status == 0 and out.strip().endswith("nothing to do")
