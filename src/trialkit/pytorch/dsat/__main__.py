"""``python3 -m trialkit.pytorch.dsat {binary,random,asha} config.yaml model_dir``."""

from __future__ import annotations

import sys

from ._run import main

if __name__ == "__main__":
    sys.exit(main())
