"""The CLI: the demo and the replay run offline; ledger, history and timeline inspect a
file; output fits 100-120 columns; errors are one line with exit status 2."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from sgam_store import SGAMStore, cli
from sgam_store.cli import commands, common
from sgam_store.read.embeddings import local_available


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


# ---------------------------------------------------------------- replay and inspection


def key_text(record: dict) -> str:
    """A fact record's key as the tables print it: subject.attribute."""
    return f"{record['subject']}.{record['attribute']}"


def sgam(monkeypatch, capsys, *argv: str, width: int = 100) -> tuple[int, str, str]:
    """Run `sgam` in-process on a console of `width` columns; (status, stdout, stderr)."""
    screen = io.StringIO()
    monkeypatch.setattr(common, "console", Console(file=screen, width=width, color_system=None))
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, screen.getvalue() + captured.out, captured.err


@pytest.fixture
def replayed(tmp_path, monkeypatch, capsys) -> str:
    db = str(tmp_path / "replay.db")
    assert sgam(monkeypatch, capsys, "replay", "--db", db, "--baseline", "keyword")[0] == 0
    return db


def test_replay_json_runs_offline_and_recreates_its_file(replayed) -> None:
    command = [sys.executable, "-m", "sgam_store.cli", "replay", "--db", replayed, "--json"]
    out = subprocess.run(  # on the file an earlier replay left: it starts over
        [*command, "--baseline", "keyword"], capture_output=True, text=True, check=True
    )
    report = json.loads(out.stdout)
    assert report["stale"] == {"baseline": 4, "sgam": 0}
    assert report["verdicts"]["sgam"]["ok"] == len(report["answers"]) == 7
    assert (report["turns"][0]["episode"], report["turns"][0]["deferred"]) == ("e0", True)
    assert report["turns"][-1]["phase"] == "background run"
    current = [f for f in report["ledger"] if f["valid_to"] is None and f["tenant_id"] == "acme"]
    assert {(key_text(f), f["value"], f["source_episode_id"]) for f in current} == {
        ("mira.passport_deadline", "2026-06-30", "e2"),
        ("mira.answer_style", "detailed", "e3"),
    }


@pytest.mark.parametrize("width", [100, 120])
def test_replay_reads_at_100_and_120_columns(tmp_path, monkeypatch, capsys, width) -> None:
    db = str(tmp_path / "replay.db")
    status, out, _ = sgam(
        monkeypatch, capsys, "replay", "--db", db, "--baseline", "keyword", width=width
    )
    assert status == 0
    assert max(len(line.rstrip()) for line in out.splitlines()) <= width
    assert "Stale answers: description memory 4 of 7, SGAM 0 of 7." in out
    # no column is cut: keys and timestamps appear whole
    assert re.search(
        r"#5 ← #2 +mira\.passport_deadline +2026-06-30 +2026-06-03T10:00:00Z +open +e2", out
    )
    assert "closed #2 mira.passport_deadline = 2026-07-15 at 2026-06-03T10:00:00Z" in out
    assert "recorded; its extraction waits for the background manager" in out


def test_a_long_replay_shows_progress_and_finishes(tmp_path, monkeypatch, capsys) -> None:
    episodes = "".join(
        f"  - {{id: n{i}, tenant: acme, at: '2026-06-01T{i:02d}:00:00Z', text: 'note {i}'}}\n"
        for i in range(commands.LONG_REPLAY)
    )
    path = tmp_path / "long.yaml"
    path.write_text(f"episodes:\n{episodes}")
    db = str(tmp_path / "long.db")
    status, out, _ = sgam(
        monkeypatch, capsys, "replay", str(path), "--db", db, "--baseline", "keyword"
    )
    assert status == 0 and f"turn {commands.LONG_REPLAY} · n{commands.LONG_REPLAY - 1}" in out


def test_ledger_history_and_timeline_inspect_the_replayed_file(
    replayed, monkeypatch, capsys
) -> None:
    key = ["--tenant", "acme", "--subject", "mira", "--attribute", "passport_deadline"]
    status, out, _ = sgam(monkeypatch, capsys, "ledger", "--db", replayed)
    assert status == 0 and "6 facts" in out and "tenant globex" in out

    status, out, _ = sgam(
        monkeypatch, capsys, "ledger", "--db", replayed, "--tenant", "globex", "--json"
    )
    assert [(key_text(f), f["value"]) for f in json.loads(out)] == [
        ("mira.passport_deadline", "2026-09-10")
    ]

    status, out, _ = sgam(monkeypatch, capsys, "history", "--db", replayed, *key, width=160)
    assert "mira: Mira corrected the deadline. It is now 2026-06-30." in out
    assert "supersedes chain: #5 2026-06-30 (e2) ← #2 2026-07-15 (e1)" in out

    status, out, _ = sgam(monkeypatch, capsys, "history", "--db", replayed, *key, "--json")
    rows = json.loads(out)
    assert [r["source_episode_id"] for r in rows] == ["e0", "e1", "e2"]
    assert rows[0]["said"]["source_kind"] == "tool_result"
    assert rows[2]["supersedes_fact_id"] == rows[1]["fact_id"]

    status, out, _ = sgam(monkeypatch, capsys, "timeline", "--db", replayed, *key[:2])
    bars = [line for line in out.splitlines() if "█" in line]
    assert status == 0 and len(bars) == 5  # 2 answer_style + 3 passport_deadline facts
    assert bars[-1].endswith("→") and "2026-06-03T10:00:00Z" in out  # the open fact, its start

    status, out, _ = sgam(monkeypatch, capsys, "timeline", "--db", replayed, "--json")
    assert len(json.loads(out)) == 6


def test_known_at_shows_what_the_store_believed_then(replayed, monkeypatch, capsys) -> None:
    _, out, _ = sgam(monkeypatch, capsys, "ledger", "--db", replayed, "--json")
    # before the replay wrote anything, the store believed nothing
    _, before, _ = sgam(
        monkeypatch,
        capsys,
        "ledger",
        "--db",
        replayed,
        "--json",
        "--known-at",
        "2000-01-01T00:00:00Z",
    )
    assert json.loads(out) and json.loads(before) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ledger", "--db", "{tmp}/none.db"], "no database at"),
        (["timeline", "--db", "{db}", "--tenant", "initech"], "--tenant initech: no such"),
        (
            [
                "history",
                "--db",
                "{db}",
                "--tenant",
                "acme",
                "--subject",
                "mira",
                "--attribute",
                "x",
            ],
            "no facts for acme · mira.x",
        ),
        (["ledger", "--db", "{db}", "--known-at", "yesterday"], "cannot parse timestamp"),
        (["replay", "nope"], "give a .yaml file or a bundled name (passport)"),
        (["replay", "{tmp}/bad.yaml"], "bad.yaml: not valid YAML"),
        (
            ["replay", "--db", "{tmp}/m.db", "--model", "no-such-provider:model"],
            "cannot load chat model 'no-such-provider:model'",
        ),
    ],
)
def test_errors_are_one_line_with_exit_status_2(
    replayed, tmp_path, monkeypatch, capsys, argv, message
) -> None:
    (tmp_path / "bad.yaml").write_text("episodes: [")
    argv = [a.format(tmp=tmp_path, db=replayed) for a in argv]
    status, _, err = sgam(monkeypatch, capsys, *argv)
    assert status == 2 and err.count("\n") == 1
    assert err.startswith("sgam: error: ") and message in err


@pytest.mark.slow
def test_sgam_replay_with_no_argument_runs_the_bundled_scenario_on_a_fresh_machine(
    tmp_path,
) -> None:
    """What `make demo` runs: the entry point, its default file, the default baseline."""
    env = {**os.environ, "COLUMNS": "100", "HF_HUB_OFFLINE": "1"}
    sgam_bin = Path(sys.executable).with_name("sgam")
    out = subprocess.run(
        [str(sgam_bin), "replay"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (tmp_path / "sgam-replay.db").is_file()
    label = "MiniLM similarity" if local_available() else "word overlap"
    assert f"baseline: top-1 episode by {label}" in out
    assert re.search(r"Stale answers: description memory \d of 7, SGAM 0 of 7\.", out)
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 100


# ---------------------------------------------------------------- read commands


def test_get_answers_now_at_and_known_at_like_fact_at(replayed, monkeypatch, capsys) -> None:
    key = ["--tenant", "acme", "--subject", "mira", "--attribute", "passport_deadline"]
    with SGAMStore.from_conn_string(replayed) as store:
        june2 = store.fact_at("acme", "mira", "passport_deadline", at="2026-06-02T00:00:00Z")
        first = store.history("acme", "mira", "passport_deadline")[1]  # e1, before e2 landed
    for extra, want in [
        ([], "2026-06-30"),
        (["--at", "2026-06-02T00:00:00Z"], june2.value),
        (["--at", "2026-06-04T00:00:00Z", "--known-at", first.recorded_at.isoformat()],
         "2026-07-15"),
    ]:  # fmt: skip
        status, out, _ = sgam(monkeypatch, capsys, "get", "--db", replayed, *key, *extra, "--json")
        assert status == 0 and json.loads(out)["value"] == want, extra
    status, out, _ = sgam(monkeypatch, capsys, "get", "--db", replayed, *key)
    assert status == 0 and "2026-06-30" in out and "e2" in out
    missing = [*key[:4], "--attribute", "x"]
    status, _, err = sgam(monkeypatch, capsys, "get", "--db", replayed, *missing)
    assert status == 2 and "no fact" in err


def test_search_runs_store_search_with_filter_mode_and_at(replayed, monkeypatch, capsys) -> None:
    base = ["search", "--db", replayed, "--tenant", "acme", "passport deadline", "--json"]
    status, out, _ = sgam(monkeypatch, capsys, *base)
    rows = json.loads(out)
    assert status == 0 and [(key_text(r), r["value"]) for r in rows] == [
        ("mira.passport_deadline", "2026-06-30")
    ]
    status, out, _ = sgam(monkeypatch, capsys, *base, "--at", "2026-06-02T00:00:00Z")
    assert [r["value"] for r in json.loads(out)] == ["2026-07-15"]
    status, out, _ = sgam(monkeypatch, capsys, *base, "--filter", '{"value": "2026-07-15"}')
    assert status == 0 and json.loads(out) == []  # the old value is not current
    status, out, _ = sgam(monkeypatch, capsys, *base, "--mode", "keyword", "--subject", "nobody")
    assert status == 0 and json.loads(out) == []
    status, _, err = sgam(monkeypatch, capsys, *base, "--mode", "vector")
    assert status == 2 and "--embedding local" in err
    status, _, err = sgam(monkeypatch, capsys, *base, "--filter", '{"value": {"$in": [1]}}')
    assert status == 2 and "Unknown filter operator" in err


def test_recall_prints_the_cited_context(replayed, monkeypatch, capsys) -> None:
    question = "When is Mira's passport deadline?"
    with SGAMStore.from_conn_string(replayed) as store:
        want = store.recall("acme", question, subjects=["mira"]).text
    args = ["recall", "--db", replayed, "--tenant", "acme", question, "--subject", "mira"]
    status, out, _ = sgam(monkeypatch, capsys, *args)
    assert status == 0 and out.strip() == want.strip()
    status, out, _ = sgam(monkeypatch, capsys, *args, "--at", "2026-06-02T00:00:00Z", "--json")
    facts = json.loads(out)["facts"]
    assert [f["value"] for f in facts if key_text(f) == "mira.passport_deadline"] == ["2026-07-15"]


def test_without_the_cli_extra_sgam_says_how_to_install_it(tmp_path: Path) -> None:
    """A plain install has no rich: `sgam` names the extra instead of a traceback."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class _NoRich:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'rich':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _NoRich())\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run(
        [sys.executable, "-m", "sgam_store.cli", "ledger", "--db", "x.db"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "pip install 'sgam-store[cli]'" in out.stderr and "Traceback" not in out.stderr


# ---------------------------------------------------------------- issue 32: day one


def test_the_replayed_file_answers_what_was_believed_on_june_2(replayed, monkeypatch, capsys):
    """README's bitemporal question on make demo's file: belief time is the scenario's."""
    argv = ["ledger", "--db", replayed, "--json", "--known-at", "2026-06-02T00:00:00Z"]
    _, out, _ = sgam(monkeypatch, capsys, *argv)
    believed = {(key_text(f), f["value"], f["valid_to"]) for f in json.loads(out)}
    assert believed == {
        ("mira.passport_deadline", "2026-07-15", None),  # the correction was not yet known
        ("mira.answer_style", "concise", None),
    }


def piped(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`sgam ...` with stdout and stderr going to pipes, as `make demo > log` has them."""
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TTY_COMPATIBLE")}
    return subprocess.run(
        [sys.executable, "-m", "sgam_store.cli", *argv],
        capture_output=True,
        text=True,
        env={**environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        timeout=300,
    )


ANSI = re.compile(r"\x1b\[")


@pytest.mark.parametrize("force_color", [None, "1"])  # "1": what a Jupyter kernel sets
def test_piped_output_is_plain_text_and_never_splits_a_key(tmp_path, force_color) -> None:
    db = str(tmp_path / "replay.db")
    env = {"FORCE_COLOR": force_color} if force_color else {}
    done = piped("replay", "--db", db, "--baseline", "keyword", env=env)
    assert done.returncode == 0, done.stderr
    assert not ANSI.search(done.stdout + done.stderr)
    # every key shown is whole: "mira.passpor" / "t_deadline" on the next line was the bug
    keys = set(re.findall(r"\bmira\.(\w+)", done.stdout))
    assert keys == {"passport_deadline", "answer_style"}
    assert max(map(len, done.stdout.splitlines())) <= commands.PIPE_WIDTH


@pytest.mark.skipif(not local_available(), reason="needs the local extra (MiniLM)")
def test_loading_minilm_prints_no_third_party_lines(tmp_path) -> None:
    """What make demo runs, piped: no deprecation notices from sentence-transformers or
    transformers (the baseline loads and traces MiniLM)."""
    done = piped("replay", "--db", str(tmp_path / "r.db"))
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    for noise in ("_target_device", "loss_type", "deprecated", "Warning"):
        assert noise not in output


@pytest.mark.skipif(not local_available(), reason="needs the local extra (MiniLM)")
def test_the_model_load_keeps_the_users_own_warnings(tmp_path) -> None:
    script = tmp_path / "mine.py"
    script.write_text(
        "import logging, warnings\n"
        "from sgam_store.read.embeddings import LocalMiniLM\n"
        "LocalMiniLM().embed_query('hello')\n"
        "warnings.warn('my own warning')\n"
        "logging.getLogger('sentence_transformers.base.model').warning('my own log line')\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert "my own warning" in done.stderr and "my own log line" in done.stderr
    assert "_target_device" not in done.stderr and "loss_type" not in done.stderr


def test_ledger_and_history_say_what_the_numbers_are(replayed, monkeypatch, capsys) -> None:
    key = ["--tenant", "acme", "--subject", "mira", "--attribute", "passport_deadline"]
    for command in ("ledger", "history"):
        _, out, _ = sgam(monkeypatch, capsys, command, "--db", replayed, *key)
        assert "#N is a fact's id" in " ".join(out.split()), command
        assert "numbers of one key or tenant skip" in " ".join(out.split())


def test_json_into_a_closed_pipe_exits_quietly(replayed) -> None:
    """`sgam ledger --json | head -1`: no 'Broken pipe' error once head has its line."""
    sgam_cli = [sys.executable, "-m", "sgam_store.cli"]
    with subprocess.Popen(
        [*sgam_cli, "ledger", "--db", replayed, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(1) == b"["
        proc.stdout.close()  # the reader goes away before the output ends
        err = proc.stderr.read().decode()
        status = proc.wait(timeout=60)
    assert err == "" and status in (0, 141)


def test_help_lists_every_command_once(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    sub = next(a for a in commands.build_parser()._actions if a.choices and a.dest == "command")
    for name in sub.choices:
        assert re.search(rf"^\s+{name}\s+\S", out, re.M), f"{name} missing from sgam --help"
    assert not re.search(r"^\s+sgam \w+", out, re.M)  # no second, hand-written list to drift


def test_import_prints_no_stray_blank_line(tmp_path) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text(
        '{"namespace": ["memories", "alice"], "key": "m1", "value": {"content": "x"}, '
        '"updated_at": "2026-03-01T09:00:00+00:00"}\n'
    )
    done = piped("import", "--from", str(items), "--db", str(tmp_path / "i.db"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported ") and "\n\n" not in done.stdout


def test_search_names_the_mode_it_ran_and_shows_the_score(replayed, monkeypatch, capsys):
    _, out, _ = sgam(monkeypatch, capsys, "search", "--db", replayed, "--tenant", "acme",
                     "passport deadline")  # fmt: skip
    assert "(keyword search)" in out and "hybrid" not in out
    _, rows, _ = sgam(monkeypatch, capsys, "search", "--db", replayed, "--tenant", "acme",
                      "passport deadline", "--json")  # fmt: skip
    score = json.loads(rows)[0]["score"]
    assert commands.score_text(score) in out  # the item's own score, as it is
    status, _, err = sgam(monkeypatch, capsys, "search", "--db", replayed, "--tenant", "acme",
                          "x", "--mode", "hybrid")  # fmt: skip
    assert status == 2 and "--mode hybrid needs an embedding" in err


@pytest.mark.skipif(not local_available(), reason="needs the local extra (MiniLM)")
def test_search_with_an_embedding_on_a_file_without_vectors_says_so(
    replayed, monkeypatch, capsys
) -> None:
    argv = ["search", "--db", replayed, "--tenant", "acme", "passport", "--embedding", "local"]
    status, out, err = sgam(monkeypatch, capsys, *argv)
    assert status == 0 and "(hybrid search)" in out
    assert "has no vectors" in err and f"sgam embed --db {replayed} --embedding local" in err


@pytest.mark.parametrize(
    ("command", "wrong", "hint"),
    [
        ("get", ["--subject", "Mira", "--attribute", "passport_deadline"], "--subject mira"),
        ("history", ["--subject", "MIRA", "--attribute", "passport_deadline"], "--subject mira"),
        ("get", ["--subject", "mira", "--attribute", "Passport_Deadline"],
         "--attribute passport_deadline"),
        ("ledger", ["--subject", "\uff2dira"], "--subject mira"),  # a full-width M: NFKC
    ],
)  # fmt: skip
def test_a_miss_suggests_names_that_differ_only_in_case(
    replayed, monkeypatch, capsys, command, wrong, hint
) -> None:
    status, _, err = sgam(
        monkeypatch, capsys, command, "--db", replayed, "--tenant", "acme", *wrong
    )
    assert status == 2 and f"did you mean {hint}" in err and err.count("\n") == 1


def test_a_miss_with_no_near_name_gives_no_hint(replayed, monkeypatch, capsys) -> None:
    argv = ["get", "--db", replayed, "--tenant", "acme", "--subject", "zoe", "--attribute", "x"]
    status, _, err = sgam(monkeypatch, capsys, *argv)
    assert status == 2 and "did you mean" not in err


def test_lifecycle_reports_show_what_was_done_rows_apart_from_facts(
    replayed, monkeypatch, capsys
) -> None:
    argv = ["purge", "--db", replayed, "--tenant", "acme", "--subject", "mira",
            "--attribute", "passport_deadline"]  # fmt: skip
    _, out, _ = sgam(monkeypatch, capsys, *argv)
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "rows deleted from facts 4" in lines  # versions of the facts table ...
    assert "facts #2, #5, #8" in lines  # ... against the three facts they were
    assert not any(line.endswith((" 0", " -")) for line in lines)  # no zero rows
    _, out, _ = sgam(monkeypatch, capsys, "retention", "--db", replayed)
    assert "nothing to do" in out and "field" not in out
