"""Suite-wide settings."""

import os

import pytest

from spanft.threads import thread_count

# Before anything imports torch or numpy: a worker's OpenMP and BLAS pools get its share of the cores (the
# rule of spanft.threads: cores / pytest-xdist workers), not one thread per core each. Training code sets
# torch's count itself by the same rule.
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_name] = str(thread_count())

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


# How xdist spreads the suite (pyproject: -n 4 --dist loadgroup). A file's tests stay together on one worker,
# because module fixtures are built once per process; the files below each run a whole `dvc repro` in theirs
# (3-5 min of a busy worker) and go first, so that no worker picks one up near the end while the others idle.
# The bad-input cases share nothing, and are spread case by case to fill the gaps.
START_FIRST = ("test_graph.py", "test_fanout.py", "test_fanout_timelimit.py", "test_real_path.py")
CASE_BY_CASE = frozenset({"test_bad_input.py"})
# The end-to-end files, marked `e2e`: each runs `dvc repro` of a graph in a temporary project (a minute or more of
# CPU each). `pytest` (the README's command, and CI's) runs them; `pytest -m "not e2e"` is the quick loop.
E2E = frozenset({*START_FIRST, "test_params_window.py", "test_single_stage.py", "test_shell_safety.py"})


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name not in CASE_BY_CASE:
            item.add_marker(pytest.mark.xdist_group(item.path.name))
        if item.path.name in E2E:
            item.add_marker(pytest.mark.e2e)
    items.sort(key=lambda item: item.path.name not in START_FIRST)  # a stable sort: the rest keep their order
