"""Suite-wide settings."""

import os

# Stage scripts run cold in the suite: dozens of throw-away workspaces would each start a warm worker
# (spanft.warm) that imports torch in the background. tests/test_warm.py turns it on where it is tested.
os.environ.setdefault("SPANFT_WARM", "0")
