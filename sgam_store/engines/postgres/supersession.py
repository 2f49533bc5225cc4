"""The supersession statements on PostgreSQL: `engines/common/supersession.py` in its dialect."""

from sgam_store.engines.common import supersession
from sgam_store.engines.common.dialect import POSTGRES, export

export(globals(), supersession, POSTGRES)
