"""The change feed on PostgreSQL: `engines/common/changes.py` in its dialect."""

from sgam_store.engines.common import changes
from sgam_store.engines.common.dialect import POSTGRES, export

export(globals(), changes, POSTGRES)
