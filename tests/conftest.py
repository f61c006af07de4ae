"""Suite-wide settings."""

import os

import pytest

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
