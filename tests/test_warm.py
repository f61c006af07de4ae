"""The warm worker (spanft.warm) runs a script as a fresh interpreter would, and never outlives its client's job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spanft import warm

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or os.path.exists("/dev/nvidiactl"),
                                reason="the warm worker is used on Linux CPU machines only")

PROBE = """\
import os, sys, time
from spanft import warm
status = warm.delegate()
if status is not None:
    sys.exit(status)
print("argv", sys.argv[1:], "cwd", os.getcwd(), "probe", os.environ.get("PROBE"), flush=True)
print("warm" if os.environ.get("SPANFT_WARM_CHILD") else "cold", file=sys.stderr, flush=True)
if sys.argv[1] == "sleep":
    open(sys.argv[2], "w").write(str(os.getpid()))
    time.sleep(120)
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("warm")
    (root / "probe.py").write_text(PROBE, encoding="utf-8")
    (root / "tmp").mkdir()
    src = str(Path(warm.__file__).resolve().parents[1])
    env = {**os.environ, "SPANFT_WARM": "1", "SPANFT_WARM_IDLE": "30", "TMPDIR": str(root / "tmp"),
           "PYTHONPATH": src, "PROBE": "x y"}
    return root, env


def run_probe(workspace, *args: str, **popen) -> subprocess.CompletedProcess:
    root, env = workspace
    return subprocess.run([sys.executable, "probe.py", *args], cwd=root, env=env, capture_output=True, text=True,
                          **popen)


def wait_for_worker(workspace, timeout: float = 120) -> None:
    root, _ = workspace
    deadline = time.monotonic() + timeout
    while not list((root / "tmp").glob("spanft-warm-*/*.sock")):
        assert time.monotonic() < deadline, "no warm worker came up"
        time.sleep(0.5)


def test_a_warm_run_is_the_cold_run(workspace):
    cold = run_probe(workspace, "3", "a b")
    assert cold.stderr.strip() == "cold"  # no worker yet: this one runs here and starts one
    wait_for_worker(workspace)
    hot = run_probe(workspace, "3", "a b")
    assert hot.stderr.strip() == "warm"
    assert (hot.returncode, hot.stdout) == (cold.returncode, cold.stdout) == (3, cold.stdout)
    assert "['3', 'a b']" in hot.stdout and "probe x y" in hot.stdout
    assert run_probe(workspace, "0").returncode == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_the_job_ends_with_its_client(workspace, signum):
    root, env = workspace
    wait_for_worker(workspace)
    pid_file = root / f"pid-{signum}"
    client = subprocess.Popen([sys.executable, "probe.py", "sleep", str(pid_file)], cwd=root, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    child = int(pid_file.read_text())
    assert child != client.pid  # the job runs in the worker's child
    client.send_signal(signum)
    client.wait(timeout=30)
    if signum == signal.SIGTERM:  # forwarded: the job ends as the signal ends it, and says so in the status
        assert client.returncode == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while _alive(child):
        assert time.monotonic() < deadline, "the job outlived its client"
        time.sleep(0.1)


def test_edited_source_gets_its_own_worker(tmp_path, monkeypatch):
    package = tmp_path / "spanft"
    package.mkdir()
    module = package / "m.py"
    module.write_text("x = 1\n")
    monkeypatch.setattr(warm, "_PACKAGE", package)
    before = warm.worker_key()
    assert warm.worker_key() == before
    module.write_text("x = 22\n")
    assert warm.worker_key() != before
    monkeypatch.setenv("SOME_SETTING", "1")
    assert warm.worker_key() != before


def test_not_used_where_it_must_not_be(monkeypatch):
    monkeypatch.setenv("SPANFT_WARM", "1")
    assert warm.enabled() == (sys.platform.startswith("linux") and not os.path.exists("/dev/nvidiactl"))
    for name, value in (("SPANFT_WARM", "0"), ("RANK", "0"), ("WORLD_SIZE", "2"), ("SPANFT_WARM_CHILD", "1")):
        with monkeypatch.context() as m:
            m.setenv(name, value)
            assert not warm.enabled()
