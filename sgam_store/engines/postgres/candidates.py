"""The candidate statements on PostgreSQL: `engines/common/candidates.py` in its dialect."""

from sgam_store.engines.common import candidates
from sgam_store.engines.common.dialect import POSTGRES, export

export(globals(), candidates, POSTGRES)
