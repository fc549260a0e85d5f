"""`python -m runner`: the host runner from the source tree (the transports ship the same
package as a zip, workers/transports.py runner_zip)."""

import sys

from .runner import main

sys.exit(main())
