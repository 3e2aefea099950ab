"""``python -m histfix``: the same command line as the ``histfix`` script."""

import sys

from ._cli.commands import main

__all__: list[str] = []  # run as a program; it exports nothing

sys.exit(main())
