"""Recall@k of vector-only, keyword-only and hybrid search on a generated memory set.

usage: python benchmarks/retrieval_eval.py [--people 30] [--questions 60] [--json PATH]

Needs the `local` extra (all-MiniLM-L6-v2 from an installed package, offline). The data
set is built by `sgam_store.harness.evaluation.generate` (see its docstring).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from sgam_store import LOCAL_DIMS, LocalMiniLM
from sgam_store.harness import compare_modes, generate

KS = (1, 5, 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=30, help="people per tenant")
    parser.add_argument("--questions", type=int, default=60, help="questions per tenant")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    dataset = generate(people=args.people, questions_per_tenant=args.questions)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        results = compare_modes(str(Path(tmp) / "eval.db"), LocalMiniLM(), LOCAL_DIMS, dataset, KS)
    facts = sum(len(group) for group in dataset.puts)
    print(f"{facts} statements, {len(dataset.questions)} questions, 3 tenants, all-MiniLM-L6-v2")
    print("| search | " + " | ".join(f"recall@{k}" for k in KS) + " |")
    print("|---|" + "---|" * len(KS))
    for mode, by_k in results.items():
        print(f"| {mode} | " + " | ".join(f"{by_k[k]:.3f}" for k in KS) + " |")
    print(f"({time.perf_counter() - started:.1f} s)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
