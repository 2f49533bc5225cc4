"""`python -m sgam_store.cli`: the same as the `sgam` command."""

import sys

from sgam_store.cli import main

sys.exit(main())
