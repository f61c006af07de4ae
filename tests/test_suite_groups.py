"""The suite's two groups: a plain `pytest` (the README's command) leaves out the end-to-end group, and CI's
second command (`pytest -m e2e`, .ci/run) runs exactly what it left out, so that nothing is dropped."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import E2E

ROOT = Path(__file__).resolve().parents[1]


# one process collects every way asked: the test modules are imported once, not once per collection
COLLECT = """
import json, sys, pytest
class Grab:
    def pytest_collection_finish(self, session):
        self.ids = [item.nodeid for item in session.items]
found = []
for args in json.loads(sys.argv[2]):
    grab = Grab()
    code = pytest.main(["--collect-only", "-qq", "-n", "0", *args], plugins=[grab])
    found.append([int(code), grab.ids])
open(sys.argv[1], "w").write(json.dumps(found))
"""


def _collected(tmp_path: Path, *ways: list[str]) -> list[set[str]]:
    """The node ids a `pytest` with each list of arguments would run, in order. Each way has a cache folder of
    its own under ``tmp_path`` unless it names one (``-o cache_dir=...``, for --lf)."""
    out = tmp_path / "collected.json"
    ways = [way if any("cache_dir=" in arg for arg in way) else [*way, "-o", f"cache_dir={tmp_path / f'cache-{i}'}"]
            for i, way in enumerate(ways)]
    done = subprocess.run([sys.executable, "-c", COLLECT, str(out), json.dumps(ways)], cwd=ROOT,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and out.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    found = json.loads(out.read_text())
    assert all(code == 0 for code, _ in found), (found, done.stdout[-2000:])
    return [set(ids) for _, ids in found]


def _files(node_ids: set[str]) -> set[str]:
    return {Path(node.split("::")[0]).name for node in node_ids}


WAYS = {"everything": ["--e2e"], "plain": [], "e2e": ["-m", "e2e"],
        "named": ["tests/test_single_stage.py", "tests/test_trivial.py"], "group": ["tests/test_shell_safety.py"],
        "keyword": ["-k", "test_shell_safety or test_trivial"], "not slow": ["-m", "not slow"],
        "chosen": ["--e2e", "-k", "test_shell_safety"]}


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> dict[str, set[str]]:
    """What each of :data:`WAYS` collects, all in one process."""
    return dict(zip(WAYS, _collected(tmp_path_factory.mktemp("ways"), *WAYS.values())))


def test_the_plain_run_and_cis_end_to_end_run_together_are_the_whole_suite(collected):
    everything, plain, e2e = collected["everything"], collected["plain"], collected["e2e"]
    assert plain and e2e
    assert not plain & e2e
    assert plain | e2e == everything
    assert _files(e2e) == set(E2E)  # every file of the group has tests, and only they are left out
    assert not _files(plain) & set(E2E)


@pytest.fixture(scope="module")
def one_test(collected, tmp_path_factory) -> dict[str, set[str]]:
    """Ways that name one test of the group (``first``): run it, deselect it, or rerun it as the last failure
    (`pytest --lf`; its id as under ``-n 0``, and as under xdist's loadgroup: ``...@test_shell_safety.py``)."""
    first = sorted(collected["group"])[0]
    folder = tmp_path_factory.mktemp("one")
    ways = {"first": first, "one": [first], "deselected": ["--deselect", first]}
    for name, suffix in (("lf n0", ""), ("lf loadgroup", f"@{Path(first.split('::')[0]).name}")):
        cache = folder / name.replace(" ", "-")
        (cache / "v" / "cache").mkdir(parents=True)
        (cache / "v" / "cache" / "lastfailed").write_text(json.dumps({first + suffix: True}), encoding="utf-8")
        ways[name] = ["--lf", "-o", f"cache_dir={cache}"]
    names = [name for name in ways if name != "first"]
    return {"first": {first}, **dict(zip(names, _collected(folder, *(ways[name] for name in names))))}


def test_a_file_of_the_group_named_on_the_command_line_runs(collected, one_test):
    assert _files(collected["named"]) == {"test_single_stage.py", "test_trivial.py"}
    assert one_test["one"] == one_test["first"]
    assert one_test["deselected"] and not _files(one_test["deselected"]) & set(E2E)  # an option's value names no file


def test_k_and_m_filter_the_plain_run_and_choose_among_all_with_e2e(collected):
    assert _files(collected["keyword"]) == {"test_trivial.py"}  # a narrowing filter never widens the run
    assert collected["not slow"] and collected["not slow"] <= collected["plain"]
    assert _files(collected["chosen"]) == {"test_shell_safety.py"}


def test_last_failed_reruns_a_failure_of_the_group(one_test):
    """`pytest --lf` after an end-to-end test failed (in `pytest -m e2e`) reruns it, not nothing."""
    assert one_test["lf n0"] == one_test["first"]
    # the id xdist saved (``...@test_shell_safety.py``): this hook runs before xdist adds the suffix, so it must
    # keep the test; collected here without xdist, pytest's own --lf matches no id and keeps everything
    assert one_test["first"] <= one_test["lf loadgroup"]


def test_ci_runs_the_readmes_command_then_the_group_it_leaves_out():
    commands = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip().startswith("pytest")]
    assert commands == ["pytest", "pytest -m e2e"]
