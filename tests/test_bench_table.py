"""benchmarks/bench_table.py fills every cell of its table, so the issue-41 table never rots.

A tiny run (200 memories a cell) of both layouts on both engines, through the real stores
and MiniLM's vectors (kept in pytest's cache between runs). The figures are not asserted
(a loaded CI box makes them noise); what is asserted: a row for every operation of every
layout x engine with a median on both sides, SGAM's answers right, and recall@10 of SGAM's
vector search 1.0 in every scope, all of them exact at this size.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from bench_table import HEADER, OPS, markdown, parse_args, plan, rows, run
from harness import Samples

TINY = Samples(
    update_batches=0, single_puts=0, gets=10, searches=4, read_budget_s=0.05, min_samples=2
)


@pytest.fixture(scope="module")
def cells(pg_server: str, request: pytest.FixtureRequest) -> list:
    cache = request.config.cache.mkdir("bench-table-vectors")  # type: ignore[union-attr]
    args = parse_args(["--sizes", "200", "--cache-dir", str(cache)])
    return run(args, TINY, log=lambda line: None)


def test_every_cell_has_every_operation_on_both_stores(cells: list) -> None:
    lines = rows(cells)
    assert lines[0] == HEADER
    found = {(line[0], line[1], line[3]) for line in lines[1:]}
    layouts, engines = ("langmem", "sgam"), ("sqlite", "postgres")
    assert found == {(op, lay, eng) for op in OPS for lay in layouts for eng in engines}
    assert len(lines) == 1 + len(found)  # one row each
    for line in lines[1:]:
        sgam_ms, peer_ms, ratio = float(line[4]), float(line[6]), line[7]
        assert sgam_ms > 0 and peer_ms > 0 and ratio.endswith("x"), line
        assert line[5] == {"sqlite": "SqliteStore", "postgres": "PostgresStore"}[line[3]]
    assert markdown(lines).count("\n") == len(lines)  # a header rule beside every line


def test_sgam_answers_right_and_its_exact_scopes_recall_everything(cells: list) -> None:
    for cell in cells:
        for op, per_store in cell.bad.items():
            assert per_store["SGAMStore"] == 0, (cell.layout, cell.engine, op)
        for scope in ("tenant search, vector", "all-tenant search, vector"):
            assert cell.recall[scope]["SGAMStore retrieval=vector"] == 1.0
            assert 0.0 <= cell.recall[scope][cell.peer] <= 1.0
    vector_rows = [line for line in rows(cells)[1:] if line[0].endswith("vector")]
    assert {line[8] for line in vector_rows} == {"1.000"}


def test_a_size_that_does_not_fill_its_subjects_is_refused() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--sizes", "210"])
    with pytest.raises(ValueError, match="multiple of 20"):
        plan("sgam", 30, TINY, seed=7)
