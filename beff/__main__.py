"""``python -m beff``."""

import os
import sys

from beff.core import early

early.defer()  # first: a Ctrl-C while the rest loads must not leave the other ranks waiting
try:
    from beff.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line loads: one line, no traceback
    if early.env_rank() in (None, 0):
        sys.stderr.write("beff: interrupted (SIGINT)\n")
    os._exit(130)

main()
