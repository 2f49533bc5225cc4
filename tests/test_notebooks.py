"""The notebooks run top to bottom, offline, from an empty directory outside the project,
and are committed without outputs (so diffs show code, not pictures, and nothing stale is
shown as a result). They leave behind only the files their text names, and 04's chart
keeps its legend off the bars."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
GUIDE = ROOT / "docs" / "notebooks.md"


def test_the_notebooks_are_there() -> None:
    assert [p.stem for p in NOTEBOOKS] == [
        "01_quickstart",
        "02_tenants_provenance_erasure",
        "03_memory_manager_graphs",
        "04_retrieval",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_stripped(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


# Run after a notebook's last cell, in its kernel: checks of what it shows.
AFTERWARDS = {
    "04_retrieval": """
from matplotlib.backends.backend_agg import FigureCanvasAgg

canvas = FigureCanvasAgg(fig)  # the figure as drawn, whatever the notebook's backend
canvas.draw()
renderer = canvas.get_renderer()
legend = ax.get_legend().get_window_extent(renderer)
covered = [bar for bar in ax.patches if bar.get_window_extent(renderer).overlaps(legend)]
assert covered == [], f"the legend covers {len(covered)} bars"
""",
}


@pytest.fixture
def installed_only(tmp_path: Path) -> Path:
    """A PYTHONPATH on which the kernel finds this checkout's sgam_store as an installed
    package, and nothing else of the checkout (not graphs/): as for a reader whose
    Jupyter starts outside the project."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sgam_store").symlink_to(ROOT / "sgam_store", target_is_directory=True)
    return site


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom_offline(
    path: Path, tmp_path, monkeypatch, installed_only
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(installed_only))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    workdir = tmp_path / "anywhere"
    workdir.mkdir()
    notebook = nbformat.read(path, as_version=4)
    named = " ".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    if path.stem in AFTERWARDS:
        notebook.cells.append(nbformat.v4.new_code_cell(AFTERWARDS[path.stem]))
    client = NotebookClient(
        notebook, kernel_name="python3", timeout=300, resources={"metadata": {"path": workdir}}
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, on any error
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    left = sorted(p.name for p in workdir.iterdir())
    assert [f for f in left if f not in named] == [], "files the notebook does not mention"


@pytest.mark.slow
def test_the_guides_command_runs_them_with_the_dev_extras_tools(
    tmp_path, monkeypatch, installed_only
) -> None:
    """docs/notebooks.md's `jupyter nbconvert` line as written, on a copy of the first
    notebook outside the project (`nbconvert` is in the dev extra, `jupyter lab` is not)."""
    (command,) = [
        line for line in GUIDE.read_text().splitlines() if line.startswith(".venv/bin/jupyter ")
    ]
    (tmp_path / "notebooks").mkdir()
    shutil.copy(NOTEBOOKS[0], tmp_path / "notebooks")
    monkeypatch.setenv("PYTHONPATH", str(installed_only))
    venv_bin = Path(sys.executable).parent
    run = subprocess.run(
        ["bash", "-c", command.replace(".venv/bin/", f"{venv_bin}/")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    page = (tmp_path / "notebooks-html" / "01_quickstart.html").read_text()
    assert "deadline       now: 2026-06-30" in page  # a cell's output, so it ran
