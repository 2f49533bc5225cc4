"""The supersession statements on SQLite: `engines/common/supersession.py` in its dialect."""

from sgam_store.engines.common import supersession
from sgam_store.engines.common.dialect import SQLITE, export

export(globals(), supersession, SQLITE)
