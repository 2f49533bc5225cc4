"""The episodes statements on SQLite: `engines/common/episodes.py` in its dialect."""

from sgam_store.engines.common import episodes
from sgam_store.engines.common.dialect import SQLITE, export

export(globals(), episodes, SQLITE)
