"""One question to the hub before any loader asks it anything: is it reachable? If not, offline mode.

Without ``HF_HUB_OFFLINE=1`` (the usual state of a cluster node), ``datasets`` and ``transformers`` retry
every request with back-off: ~25 s and two dozen warning lines before the one error that matters, per
loader. :func:`settle_offline_mode` asks the endpoint once, with a short timeout and no retry; when nothing
answers, it turns on the libraries' offline mode in this process (and in the processes it starts), so every
loader (datasets, models, tokenizers, the corpus, commit look-ups) goes straight to the hub cache: what is
cached loads, and what is not ends in spanft's one-line error at once. Whatever the environment says: an
explicit ``HF_HUB_OFFLINE=0`` with no network ends the same way. Any HTTP answer counts as reachable.
"""

from __future__ import annotations

import functools
import logging
import os
import sys

log = logging.getLogger("spanft")

PROBE_TIMEOUT_S = 3.0
_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


def _constants():
    """huggingface_hub's settings, imported when first asked (half a second): a stage on synthetic or local
    data, which imports this module with its readers, never asks."""
    from huggingface_hub import constants

    return constants


def hub_endpoint() -> str:
    return _constants().ENDPOINT


def offline_mode() -> bool:
    """Whether the hub libraries are in offline mode in this process."""
    return bool(_constants().HF_HUB_OFFLINE)


@functools.lru_cache(maxsize=None)
def _reachable(endpoint: str) -> bool:
    """One HEAD request to ``endpoint`` (proxies from the environment honoured), no retry."""
    from huggingface_hub.utils import get_session

    try:
        get_session().head(endpoint, timeout=PROBE_TIMEOUT_S, follow_redirects=False)
    except Exception as exc:  # connection refused, DNS failure, timeout, proxy error: nothing answered
        log.debug("the hub at %s does not answer (%s): offline mode", endpoint, type(exc).__name__)
        return False
    return True


def settle_offline_mode() -> bool:
    """Turn on offline mode unless the hub answers; True when offline. Call it before any hub loader."""
    if offline_mode():
        return True
    if _reachable(hub_endpoint()):
        return False
    force_offline_mode()
    return True


def force_offline_mode() -> None:
    """Offline mode for huggingface_hub, transformers and datasets here, and for the processes started later."""
    for name in _OFFLINE_VARIABLES:
        os.environ[name] = "1"
    _constants().HF_HUB_OFFLINE = True  # transformers reads it through huggingface_hub.constants.is_offline_mode
    config = sys.modules.get("datasets.config")  # datasets copies it at import; set it if already imported
    if config is not None:
        config.HF_HUB_OFFLINE = config.HF_DATASETS_OFFLINE = True
