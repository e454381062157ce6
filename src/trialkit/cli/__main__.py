"""``python -m trialkit.cli``."""

from . import main

main()
