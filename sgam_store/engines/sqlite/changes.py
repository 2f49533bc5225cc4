"""The change feed on SQLite: `engines/common/changes.py` in its dialect."""

from sgam_store.engines.common import changes
from sgam_store.engines.common.dialect import SQLITE, export

export(globals(), changes, SQLITE)
