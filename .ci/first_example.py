"""Run README.md's first Python example against an installed sgam-store.

CI runs this in a fresh venv holding `pip install .` and no extras, from another
directory, so an import that the core dependencies do not cover fails here.
"""

import re
from pathlib import Path

import sgam_store

README = Path(__file__).resolve().parent.parent / "README.md"
code = re.search(r"```python\n(.*?)```", README.read_text(), flags=re.S)
if code is None:
    raise SystemExit("README.md has no Python example")
exec(compile(code.group(1), str(README), "exec"), {"__name__": "readme"})
if "site-packages" not in sgam_store.__file__:
    raise SystemExit(f"sgam_store came from the checkout, not the install: {sgam_store.__file__}")
print(f"plain install: import sgam_store and README's first example ran ({sgam_store.__file__})")
