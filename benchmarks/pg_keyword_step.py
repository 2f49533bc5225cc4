"""The keyword side of an all-tenant hybrid search on PostgreSQL, and cheaper forms of it.

The all-tenant hybrid search is behind PostgresStore by more than its vector side: the
keyword statement (`keyword_hits` in engines/postgres/reads.py) ranks every match across
tenants by `ts_rank_cd` before it keeps the best 30. This script loads bench_table's
memory text (`plan`: its layouts, sizes and seed) into a bare `fact_keywords` table shaped
as SGAM's (the generated tsvector, the GIN index on (tenant_id, tsv) without a pending
list), analyzes it, and times that statement against `ts_rank` and against reading the
matches unranked, on the all-tenant questions' terms, any of them (each question's
`plainto_tsquery` with its ANDs made ORs, as the read path's keyword query matches any
term, before its common-term cut). Rounds alternate the forms.

    python benchmarks/pg_keyword_step.py --layout langmem --size 20000
"""

from __future__ import annotations

import argparse
import statistics
import time

import psycopg
from bench_table import plan
from harness import Databases, Samples

TABLE = (
    "CREATE TABLE fact_keywords (fact_id bigint PRIMARY KEY, tenant_id text NOT NULL, "
    "body text NOT NULL, tsv tsvector GENERATED ALWAYS AS "
    "(to_tsvector('english'::regconfig, body)) STORED)"
)
INDEX = (
    "CREATE INDEX fact_keywords_tsv ON fact_keywords USING gin (tenant_id, tsv) "
    "WITH (fastupdate = off)"
)
MATCH = "FROM fact_keywords WHERE tsv @@ %(q)s::tsquery"
FORMS = {
    "ts_rank_cd, top 30 (today)": f"SELECT fact_id, ts_rank_cd(tsv, %(q)s::tsquery) AS r {MATCH} "
    "ORDER BY r DESC, fact_id LIMIT 30",
    "ts_rank, top 30": f"SELECT fact_id, ts_rank(tsv, %(q)s::tsquery) AS r {MATCH} "
    "ORDER BY r DESC, fact_id LIMIT 30",
    "every match, unranked": f"SELECT fact_id {MATCH}",
    "count of matches": f"SELECT count(*) {MATCH}",
}


def load(conn: psycopg.Connection, layout: str, size: int, seed: int) -> list[str]:
    """The workload's memories as keyword rows; its all-tenant questions as tsqueries."""
    workload = plan(layout, size, Samples(0, 0, 1, 50, 0.5, 1), seed)
    conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    conn.execute("CREATE TABLE sgam_meta (key text PRIMARY KEY, value text)")
    conn.execute("INSERT INTO sgam_meta VALUES ('text_search_config', 'english')")
    conn.execute(TABLE)
    tenant_at = workload.layout.tenant_at
    with conn.cursor().copy("COPY fact_keywords (fact_id, tenant_id, body) FROM STDIN") as copy:
        for i, ((ns, _), value) in enumerate(workload.memories.items()):
            copy.write_row((i, ns[tenant_at], value["content"]))
    conn.execute(INDEX)
    conn.execute("ANALYZE")
    any_term = "SELECT replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')"
    queries = [conn.execute(any_term, (q,)).fetchone()[0] for _, q in workload.everywhere]
    return [q for q in queries if q]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", default="langmem", choices=["langmem", "sgam"])
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7, help="bench_table's workload seed")
    parser.add_argument("--pg-uri", help="an existing PostgreSQL server (default: embedded)")
    args = parser.parse_args()
    databases = Databases(args.pg_uri)
    try:
        with psycopg.connect(databases.fresh(), autocommit=True) as conn:
            queries = load(conn, args.layout, args.size, args.seed)
            matches = [
                conn.execute(FORMS["count of matches"], {"q": q}).fetchone()[0] for q in queries
            ]
            print(
                f"{args.layout} layout, {args.size:,} memories, {len(queries)} questions: "
                f"matches median {statistics.median(matches):,.0f}, most {max(matches):,}"
            )
            for round_ in range(args.rounds):
                for name, sql in FORMS.items():
                    ms = []
                    for q in queries:
                        started = time.perf_counter()
                        conn.execute(sql, {"q": q}).fetchall()
                        ms.append((time.perf_counter() - started) * 1000)
                    print(
                        f"  round {round_ + 1}  {name:<28} median {statistics.median(ms):7.2f} ms"
                    )
    finally:
        databases.close()


if __name__ == "__main__":
    main()
