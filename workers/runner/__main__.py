"""`python -m workers.runner`: the host runner, as the transports ship it (see package.py)."""

import sys

from .runner import main

sys.exit(main())
