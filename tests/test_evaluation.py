"""Retrieval quality on the generated set, with the bundled all-MiniLM-L6-v2."""

from __future__ import annotations

import pytest

from sgam_store.harness.evaluation import compare_modes, generate
from sgam_store.read.embeddings import LOCAL_DIMS


@pytest.mark.slow
def test_hybrid_clearly_beats_vector_only(tmp_path, minilm) -> None:
    dataset = generate(people=20, questions_per_tenant=30, seed=11)
    results = compare_modes(str(tmp_path / "eval.db"), minilm, LOCAL_DIMS, dataset)
    assert results["hybrid"][10] >= results["vector"][10] + 0.2
    assert results["hybrid"][10] >= results["keyword"][10]
    assert results["hybrid"][1] > results["vector"][1]


def test_generated_set_has_corrections_and_shared_names() -> None:
    dataset = generate(people=10, questions_per_tenant=5)
    first, later = dataset.puts
    assert later, "some values are corrected after the first statement"
    keys_first = {(p.namespace, p.key) for p in first}
    assert all((p.namespace, p.key) in keys_first for p in later)
    subjects = {}
    for put in first:
        subjects.setdefault(put.namespace[1], set()).add(put.namespace[0])
    assert any(len(tenants) > 1 for tenants in subjects.values())
