"""The episodes statements on PostgreSQL: `engines/common/episodes.py` in its dialect."""

from sgam_store.engines.common import episodes
from sgam_store.engines.common.dialect import POSTGRES, export

export(globals(), episodes, POSTGRES)
