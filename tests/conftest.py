"""Suite-wide settings, and the expensive builds that several test files share (built once per run)."""

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

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


# How xdist spreads the suite (pyproject: -n 4 --dist loadgroup --no-loadscope-reorder). A file's tests stay
# together on one worker, because module fixtures are built once per process. The files below are the longest
# (a `dvc repro` of a graph each, or the fan-out's jobs: minutes of a busy worker; in a plain run, the last two:
# a minute or more each) and go first, in this order, so
# that no worker picks one up near the end while the others idle; xdist keeps the order only without its own
# reordering (by test count), hence --no-loadscope-reorder. A worker takes its next file while its last two tests
# run (it needs the next test known), so the long one-test file takes the skipped-by-default time-limit file with
# it, not another long file. The bad-input cases share nothing, and are spread case by case to fill the gaps.
LONGEST_E2E = ("test_graph.py", "test_fanout.py", "test_real_path.py", "test_users_own_run.py",
               "test_fanout_timelimit.py", "test_fanout_runs.py")
START_FIRST = (*LONGEST_E2E, "test_suite_groups.py", "test_lock_recovery.py")
CASE_BY_CASE = frozenset({"test_bad_input.py"})
# The end-to-end group, marked `e2e`: the files that run `dvc repro` of a graph in a temporary project, or the
# fan-out's SLURM jobs (minutes of CPU each; benchmarks/RESULTS.md has the group's time). A plain `pytest` (the
# README's command) leaves them out unless a file of theirs is named on the command line (`pytest --lf` reruns
# those of them that failed); -k and other -m expressions filter what is left. `pytest -m e2e` runs only them,
# `pytest --e2e` everything (`pytest --e2e -k x` chooses among all). CI runs `pytest`, then `pytest -m e2e`.
E2E = frozenset({*LONGEST_E2E, "test_params_window.py", "test_single_stage.py", "test_shell_safety.py",
                 "test_fanout_resend.py"})
E2E_OPTION = "--e2e"


def pytest_addoption(parser):
    parser.addoption(E2E_OPTION, action="store_true",
                     help="also run the end-to-end group (tests/conftest.py: E2E), which a plain `pytest` leaves out")


def _e2e_left_out(config: pytest.Config) -> bool:
    """Whether this run leaves the end-to-end group out: neither --e2e nor a -m expression that names the group
    (``-m e2e``) was given. Any other -m or -k filters what a plain run holds: ``-m "not slow"`` never brings
    the group back."""
    return not (config.getoption(E2E_OPTION) or "e2e" in (config.option.markexpr or ""))


def _named_files(config: pytest.Config) -> set[Path]:
    """The test files named on the command line (``tests/test_graph.py``, ``tests/test_graph.py::test_x``): its
    arguments, not an option's value (``--deselect tests/test_graph.py::test_x`` names no file to run)."""
    named = (Path(config.invocation_params.dir, arg.split("::")[0]) for arg in config.args)
    return {path.resolve() for path in named if path.is_file()}


def _last_failed(config: pytest.Config) -> set[str]:
    """Under --lf, the tests that failed last time (`pytest -m e2e`'s too): `pytest --lf` reruns them. Under
    xdist a test's id ends in its group's (``@test_graph.py``), added after this file's hook."""
    plugin = config.pluginmanager.get_plugin("lfplugin")
    if plugin is None or not config.getoption("lf", False):
        return set()
    return {key.removesuffix(f"@{Path(key.split('::')[0]).name}") for key in plugin.lastfailed}


def pytest_report_header(config: pytest.Config) -> str | None:
    if _e2e_left_out(config) and not _named_files(config) and not _last_failed(config):
        return (f"the end-to-end group ({len(E2E)} files: `dvc repro` of whole graphs, SLURM jobs) is left out: "
                f"`pytest -m e2e` runs it, `pytest --e2e` everything; CI runs both")
    return None


def _start_rank(item: pytest.Item) -> int:
    name = item.path.name
    return START_FIRST.index(name) if name in START_FIRST else len(START_FIRST)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name not in CASE_BY_CASE:
            item.add_marker(pytest.mark.xdist_group(item.path.name))
        if item.path.name in E2E:
            item.add_marker(pytest.mark.e2e)
    if _e2e_left_out(config):
        named, failed = _named_files(config), _last_failed(config)
        left_out = [item for item in items
                    if item.path.name in E2E and item.path.resolve() not in named and item.nodeid not in failed]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            kept = set(items) - set(left_out)
            items[:] = [item for item in items if item in kept]
    items.sort(key=_start_rank)  # a stable sort: the rest keep their order


# ------------------------------------------------------------------------------------------ built once per run


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """``build(folder)`` run once per test run, by whichever pytest-xdist worker asks first; the others wait for
    it and get the same folder. Read it, or copy it before changing anything in it. A build that failed fails
    every later asker with its message instead of running again in each worker."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's folder, every worker's
    folder, done, failed = (shared / f"built-{name}{suffix}" for suffix in ("", ".done", ".failed"))
    with FileLock(f"{folder}.lock"):
        if failed.exists():
            pytest.fail(f"the shared build {name!r} failed earlier in this run: {failed.read_text(encoding='utf-8')}")
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                build(folder)
            except Exception as error:
                failed.write_text(f"{type(error).__name__}: {str(error)[-2000:]}", encoding="utf-8")
                raise
            done.touch()
    return folder


@pytest.fixture(scope="session")
def reduced_graph_run(tmp_path_factory) -> tuple[Path, dict]:
    """tests/test_graph.py's reduced graph after one `dvc repro` from nothing: the project (read only: copy it
    to change it) and that repro's output ({"stdout", "stderr"}). test_graph's tests read it;
    test_users_own_run.py seeds its clone's cache from it."""
    import json

    if shutil.which("dvc") is None:
        pytest.skip("dvc is not installed")
    from test_graph import dvc, new_project, reduced_params

    def build(folder: Path) -> None:
        project = new_project(folder / "project", reduced_params())
        first = dvc(project, "repro")
        (folder / "first.json").write_text(json.dumps({"stdout": first.stdout, "stderr": first.stderr}),
                                           encoding="utf-8")

    folder = built_once(tmp_path_factory, "reduced-graph", build)
    return folder / "project", json.loads((folder / "first.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def serial(tmp_path_factory) -> Path:
    """The fan-out files' reference (tests/test_fanout.py: fanout_params): a serial `dvc repro` of the whole
    graph in a committed project, once per run for every fan-out file. Read only: tests copy it."""
    if shutil.which("dvc") is None:
        pytest.skip("dvc is not installed")
    from test_fanout import committed_project
    from test_graph import dvc

    def build(folder: Path) -> None:
        dvc(committed_project(folder / "head"), "repro")

    return built_once(tmp_path_factory, "fanout-serial", build) / "head"
