"""What both engines share, written once: statements with `?` placeholders and a `Dialect`
for the few fragments that differ (each engine's modules bind them with `export`), the
DDL both write alike (`schema`), the filter walk (`filters`), and the engine classes'
statement sets (`engine`). Each engine package keeps only what its database does its own
way: FTS5 against tsvector, the vector table against pgvector, locks, its other DDL.

Why not SQLAlchemy Core: measured on a 2,000-fact SQLite store (SQLAlchemy 2.1, compiled
cache warm, medians of 5 x 3,000 calls, a loaded 2-core machine), its per-call cost over a
raw cursor was: get 5.8 -> 53.8 us, a candidate check of 60 ids 85 -> 229 us, the queue
insert of a put 11 -> 33 us; the store's whole get is 56 us. The dialect object adds one
dict lookup per statement on PostgreSQL and nothing on SQLite.
"""
