"""``python -m beff``."""

import os
import sys

try:
    from beff.core import early

    early.defer()  # first: a Ctrl-C while the rest loads must not leave the other ranks waiting
    from beff.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line loads: one line, no traceback
    from beff.core.early import env_rank

    if env_rank() in (None, 0):
        sys.stderr.write("beff: interrupted (SIGINT)\n")
    os._exit(130)

main()
