"""`python -m daemon` is `anima`."""

import sys

from daemon.cli import main

sys.exit(main())
