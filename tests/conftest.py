"""Suite-wide settings."""

import os

# Stage scripts run cold in the suite: dozens of throw-away workspaces would each start a warm worker
# (spanft.warm) that imports torch in the background. tests/test_warm.py turns it on where it is tested.
os.environ.setdefault("SPANFT_WARM", "0")


import pytest  # noqa: E402

_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "DISABLE_SAFETENSORS_CONVERSION")


@pytest.fixture(autouse=True)
def _hub_mode_restored(monkeypatch):
    """spanft.data.hub turns offline mode on process-wide when the hub does not answer: undo it after each test."""
    import huggingface_hub.constants

    for name in _OFFLINE_VARIABLES:
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", huggingface_hub.constants.HF_HUB_OFFLINE)
    try:
        import datasets.config
    except ImportError:
        return
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setattr(datasets.config, name, getattr(datasets.config, name))
