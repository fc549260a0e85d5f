import sys

from experiments.parsers.cli import main

sys.exit(main())
