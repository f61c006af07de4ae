"""``python -m spanft.cli`` (what torchrun and accelerate launch start)."""

import sys

from spanft.cli import main

sys.exit(main())
