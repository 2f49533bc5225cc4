"""The candidate statements on SQLite: `engines/common/candidates.py` in its dialect."""

from sgam_store.engines.common import candidates
from sgam_store.engines.common.dialect import SQLITE, export

export(globals(), candidates, SQLITE)
