"""The suite's two groups: a plain `pytest` (the README's command) leaves out the end-to-end group, and CI's
second command (`pytest -m e2e`, .ci/run) runs exactly what it left out, so that nothing is dropped."""

import subprocess
import sys
from pathlib import Path

from conftest import E2E

ROOT = Path(__file__).resolve().parents[1]


def _collected(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                           *args], cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {line for line in done.stdout.splitlines() if line.startswith("tests/") and "::" in line}


def _files(node_ids: set[str]) -> set[str]:
    return {Path(node.split("::")[0]).name for node in node_ids}


def test_the_plain_run_and_cis_end_to_end_run_together_are_the_whole_suite():
    everything, plain, e2e = _collected("--e2e"), _collected(), _collected("-m", "e2e")
    assert plain and e2e
    assert not plain & e2e
    assert plain | e2e == everything
    assert _files(e2e) == set(E2E)  # every file of the group has tests, and only they are left out
    assert not _files(plain) & set(E2E)


def test_a_file_of_the_group_named_on_the_command_line_runs():
    named = _collected("tests/test_single_stage.py", "tests/test_trivial.py")
    assert _files(named) == {"test_single_stage.py", "test_trivial.py"}
    one = _collected("tests/test_shell_safety.py::" + next(
        node.split("::")[1] for node in _collected("tests/test_shell_safety.py")))
    assert len(one) == 1


def test_ci_runs_the_readmes_command_then_the_group_it_leaves_out():
    commands = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip().startswith("pytest")]
    assert commands == ["pytest", "pytest -m e2e"]
