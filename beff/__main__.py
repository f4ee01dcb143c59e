"""``python -m beff``."""

import os
import sys

try:
    from beff.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line loads: one line, no traceback
    if not any(os.environ.get(v, "0") not in ("", "0") for v in
               ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID")):
        sys.stderr.write("beff: interrupted (SIGINT)\n")
    os._exit(130)

main()
