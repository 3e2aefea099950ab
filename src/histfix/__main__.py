"""``python -m histfix``: the same command line as the ``histfix`` script."""

import sys

from ._cli import main

sys.exit(main())
