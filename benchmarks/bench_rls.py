"""What row security costs SGAMStore's searches on PostgreSQL (issue 28).

One database, loaded once with `bench_store.py`'s workload (384-d hashed vectors,
tenants of 10,000 facts: 2 at 20k facts, 10 at 100k), then read by three handles on it,
round-robin, medians:

- "off": a BYPASSRLS role with the store's confinement off, which is the store without
  row security (no policy applies, no per-transaction setting);
- "setting": the same role with the per-transaction `set_config` on, to separate its round
  trip from the policies' cost;
- "RLS": the application role (`roles.create_app_role`), bound by the policies.

Each searches through `for_tenant` views: keyword, vector and hybrid, over a whole
tenant ("tenant", 10k facts) and one subject of it ("user": the LangMem shape, 20 facts).
It also prints EXPLAIN of the statements a tenant's keyword, vector and hybrid search
sends (captured from the store, replayed) with and without the policy.

    flock /tmp/sgam-bench.lock python benchmarks/bench_rls.py --size 20000
    flock /tmp/sgam-bench.lock python benchmarks/bench_rls.py --size 100000 --scopes user
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402  (the workload and the timing harness)

from sgam_store import SGAMStore  # noqa: E402

TENANT_FACTS = 10_000
# What `roles.create_app_role` grants (docs/postgres.md): benchmarks use public names only.
GRANTS = [
    "CREATE ROLE {role} LOGIN NOSUPERUSER",
    "GRANT USAGE ON SCHEMA sgam TO {role}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA sgam TO {role}",
    "REVOKE INSERT, UPDATE, DELETE ON sgam.sgam_meta FROM {role}",
    "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA sgam TO {role}",
]
MODES = ("keyword", "vector", "hybrid")
HANDLES = ("off", "setting", "RLS")


def as_role(uri: str, role: str) -> str:
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rsplit('@', 1)[-1]}"))


def load(uri: str, work: harness.Workload, embedder: Any, log: Any) -> None:
    """The workload's facts, written by the owner, row security on."""
    started = time.perf_counter()
    index = harness.index_config(embedder)
    with SGAMStore.from_conn_string(uri, index=index, row_security=True) as owner:
        owner.setup()
        for batch in work.load_batches:
            owner.batch(batch)
    log(f"loaded {work.size:,} facts in {time.perf_counter() - started:.0f}s")


def make_roles(uri: str) -> dict[str, str]:
    """URIs of an application role and of a BYPASSRLS role with the same grants."""
    app, bypass = ("rls_app_" + uuid.uuid4().hex[:8], "rls_bypass_" + uuid.uuid4().hex[:8])
    with psycopg.connect(uri, autocommit=True) as conn:
        for role in (app, bypass):
            for statement in GRANTS:
                conn.execute(statement.format(role=role))
        conn.execute(f"ALTER ROLE {bypass} BYPASSRLS")
    return {"app": as_role(uri, app), "bypass": as_role(uri, bypass)}


def open_handles(uris: dict[str, str], embedder: Any) -> dict[str, SGAMStore]:
    index = harness.index_config(embedder)
    stores = {
        "off": SGAMStore(uris["bypass"], index=index),
        "setting": SGAMStore(uris["bypass"], index=index),
        "RLS": SGAMStore(uris["app"], index=index),
    }
    for store in stores.values():
        store.setup()
    stores["off"].engine.confined = False  # the store as it runs without row security
    return stores


def searches(work: harness.Workload, scope: str) -> list[tuple[str, tuple[str, ...], str]]:
    """(tenant, namespace prefix inside the tenant, query) samples."""
    if scope == "tenant":
        return [(t, (), q) for t, q in work.tenant_queries]
    return [(ns[0], (ns[1],), q) for ns, q in work.subject_queries]


def measure(
    stores: dict[str, SGAMStore], work: harness.Workload, scopes: list[str], samples: Any
) -> list[dict[str, Any]]:
    rows = []
    for scope in scopes:
        for mode in MODES:
            for store in stores.values():
                store.retrieval = type(store.retrieval)(mode=mode)

            def runner(store: SGAMStore) -> Any:
                return lambda s: store.for_tenant(s[0]).search(s[1], query=s[2], limit=10)

            timings = harness.round_robin(
                {name: runner(store) for name, store in stores.items()},
                searches(work, scope),
                budget_s=samples.read_budget_s,
                min_samples=samples.min_samples,
            )
            answers = {n: [[i.key for i in r] for r in out] for n, out in timings.outputs.items()}
            n = min(len(a) for a in answers.values())
            same = all(answers[h][:n] == answers["off"][:n] for h in HANDLES)
            medians = {h: harness.summary(timings.seconds[h])["median_s"] for h in HANDLES}
            rows.append({"scope": scope, "mode": mode, "median_s": medians, "same_answers": same})
    return rows


def sent(store: SGAMStore, tenant: str, question: str) -> list[tuple[str, Any]]:
    """Every statement one search of `store` sends, with its parameters, as sent: the
    connection's `execute` is wrapped for the call (benchmarks use public names only)."""
    captured: list[tuple[str, Any]] = []
    execute = psycopg.Connection.execute

    def recording(conn: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        captured.append((str(query), params))
        return execute(conn, query, params, **kwargs)

    psycopg.Connection.execute = recording  # type: ignore[method-assign]
    try:
        store.for_tenant(tenant).search((), query=question, limit=10)
    finally:
        psycopg.Connection.execute = execute  # type: ignore[method-assign]
    # The search's reads: not the pool's check (""), the transaction or the setting.
    skip = ("BEGIN", "COMMIT", "SELECT set_config")
    return [(sql, params) for sql, params in captured if sql and not sql.startswith(skip)]


def explain(stores: dict[str, SGAMStore], uris: dict[str, str], work: harness.Workload) -> dict:
    """Plans of a tenant's keyword, vector and hybrid search, bound by the policy or not:
    the statements the store sends (captured from a search of the RLS handle), replayed
    under EXPLAIN ANALYZE with the tenant's setting, as the application role and as the
    BYPASSRLS one."""
    tenant, question = work.tenant_queries[0]
    statements = {}
    for mode in MODES:
        store = stores["RLS"]
        store.retrieval = type(store.retrieval)(mode=mode)
        for i, statement in enumerate(sent(store, tenant, question)):
            statements[f"{mode} search, statement {i + 1}"] = statement
    plans = {}
    for who, uri in (("RLS", uris["app"]), ("off", uris["bypass"])):
        with psycopg.connect(uri, options="-c search_path=sgam,public") as conn:
            conn.execute("SELECT set_config('sgam.tenant', %s, true)", (tenant,))
            for name, (sql, params) in statements.items():
                rows = conn.execute("EXPLAIN (ANALYZE, COSTS OFF) " + sql, params).fetchall()
                text = "\n".join(r[0] for r in rows if "Buffers" not in r[0])
                head = re.sub(r"'\[[^]]*\]'", "$query", sql)[:100]
                text = re.sub(r"'\[[^]]*\]'::vector", "$query", text)
                plans[f"{name}, {who}"] = f"{head}...\n{text}"
    return plans


def table(size: int, rows: list[dict[str, Any]]) -> str:
    lines = [
        f"| facts | scope | mode | {' | '.join(HANDLES)} | RLS / off |",
        "|---|---|---|" + "---|" * len(HANDLES) + "---|",
    ]
    for r in rows:
        m = r["median_s"]
        cells = " | ".join(f"{m[h] * 1000:.2f} ms" for h in HANDLES)
        ratio = m["RLS"] / m["off"]
        flag = "" if r["same_answers"] else " (answers differ!)"
        lines.append(f"| {size:,} | {r['scope']} | {r['mode']} | {cells} | {ratio:.2f}x{flag} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, action="append", help="facts (default 20000)")
    parser.add_argument("--scopes", default="tenant,user", help="tenant,user (default both)")
    parser.add_argument("--pg-uri", help="an existing PostgreSQL server (default: embedded)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    scopes = [s for s in args.scopes.split(",") if s]
    samples = harness.QUICK
    databases = harness.Databases(args.pg_uri)
    report: dict[str, Any] = {"environment": harness.environment(), "runs": []}
    for size in args.size or [20_000]:
        harness.TENANTS = max(1, size // TENANT_FACTS)  # tenants of 10k facts
        work = harness.plan(size, samples, args.seed)
        embedder = harness.CachedHashEmbeddings()
        embedder.warm(work.texts())
        uri = databases.fresh()
        print(f"== {size:,} facts, {harness.TENANTS} tenants of {TENANT_FACTS:,} ==", flush=True)
        load(uri, work, embedder, print)
        uris = make_roles(uri)
        stores = open_handles(uris, embedder)
        rows = measure(stores, work, scopes, samples)
        plans = explain(stores, uris, work)
        for store in stores.values():
            store.close()
        print(table(size, rows), flush=True)
        for name, plan in plans.items():
            print(f"\n-- EXPLAIN {name}\n{plan}", flush=True)
        report["runs"].append({"size": size, "rows": rows, "plans": plans})
    databases.close()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
