"""`python -m sgam_store.cli`: the same as the `sgam` command."""

import sys

from . import main

sys.exit(main())
