"""``python -m beff``."""

from beff.cli import main

main()
