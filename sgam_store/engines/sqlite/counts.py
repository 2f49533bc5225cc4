"""Current keys per namespace on SQLite: `engines/common/counts.py` in its dialect."""

from sgam_store.engines.common import counts
from sgam_store.engines.common.dialect import SQLITE, export

export(globals(), counts, SQLITE)
