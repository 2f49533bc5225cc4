"""Candidates' stored vectors as unit rows: what scoring (centering) and fusion
(redundancy) both read, so neither calls the other. Nothing here writes."""

from __future__ import annotations

from typing import Any

import numpy as np


def stored(
    engine: Any, conn: Any, mirror: Any, fact_ids: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(fact id of each row, its row) of every stored field vector of `fact_ids`: from
    the in-process mirror where it answers the search, else read (`reads.vectors`)."""
    if mirror is not None:
        return mirror.units(fact_ids)
    rows = engine.reads.vectors(conn, fact_ids)
    ids = np.fromiter((fid for fid, _ in rows), np.int64, len(rows))
    matrix = np.frombuffer(b"".join(blob for _, blob in rows), np.float32)
    return ids, matrix.reshape(len(rows), -1)


def unit(rows: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero: it has no direction)."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))[:, None]
    return rows / np.where(norms > 0, norms, 1.0)


def per_fact(engine: Any, conn: Any, mirror: Any, fact_ids: list[int]) -> np.ndarray:
    """A unit row a fact of `fact_ids`, in their order: the direction of the mean of its
    stored field vectors (a zero row for a fact with none): what redundancy compares."""
    ids, matrix = stored(engine, conn, mirror, fact_ids)
    if not len(ids):
        return np.zeros((len(fact_ids), 0), np.float32)
    if len(ids) == len(fact_ids) and ids.tolist() == fact_ids:  # a row each, in order
        return unit(matrix)
    out = np.zeros((len(fact_ids), matrix.shape[1]), np.float32)
    at = {fid: i for i, fid in enumerate(fact_ids)}
    rows = [at[fid] for fid in ids.tolist()]
    if len(set(rows)) == len(rows):  # a field vector a fact, the common case: no sum
        out[rows] = matrix
    else:
        np.add.at(out, rows, unit(matrix))
    return unit(out)
