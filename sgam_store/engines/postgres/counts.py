"""Current keys per namespace on PostgreSQL: `engines/common/counts.py` in its dialect."""

from sgam_store.engines.common import counts
from sgam_store.engines.common.dialect import POSTGRES, export

export(globals(), counts, POSTGRES)
