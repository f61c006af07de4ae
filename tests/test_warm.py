"""The warm worker (spanft.warm) runs a script as a fresh interpreter would, and never outlives its client's job."""

from __future__ import annotations

import os
import shlex
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
    time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 120)
    print("slept", flush=True)
    sys.exit(0)
if sys.argv[1] == "shutdown":  # what a fresh interpreter does at exit
    import atexit, threading
    atexit.register(lambda: print("atexit ran", flush=True))
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread ran", flush=True))).start()
    sys.exit(0)
if sys.argv[1] == "closeout":
    sys.stdout.close()
    sys.exit(0)
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
    if not list((root / "tmp").glob("spanft-warm-*/*.sock")):
        run_probe(workspace, "0")  # starts one (when none is starting already)
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
    assert client.returncode == -signum  # SIGTERM forwarded: the client ends as its job did, by the signal
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


def _worker_pid(workspace) -> int:
    root, _ = workspace
    sock = next((root / "tmp").glob("spanft-warm-*/*.sock"))
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if str(sock).encode() in cmdline:
                return int(proc.name)
    raise AssertionError("no worker process")


def test_a_failed_exit_is_the_job_s_alone(workspace):
    """A job whose stdout is gone at exit ends as a fresh interpreter does; the worker serves on."""
    wait_for_worker(workspace)
    root, env = workspace
    sock = next((root / "tmp").glob("spanft-warm-*/*.sock"))
    cold = subprocess.run([sys.executable, "probe.py", "closeout"], cwd=root, env={**env, "SPANFT_WARM": "0"},
                          capture_output=True, text=True)
    hot = run_probe(workspace, "closeout")
    assert hot.returncode == cold.returncode and "warm" in hot.stderr and "job failed" not in hot.stderr
    assert sock.exists()
    assert run_probe(workspace, "0").stderr.strip() == "warm"


def test_exit_runs_atexit_handlers_and_waits_for_threads(workspace):
    wait_for_worker(workspace)
    hot = run_probe(workspace, "shutdown")
    assert hot.stderr.strip() == "warm"
    assert sorted(hot.stdout.split("\n")[1:3]) == ["atexit ran", "thread ran"]


def test_a_second_client_runs_cold_instead_of_queueing(workspace):
    root, env = workspace
    wait_for_worker(workspace)
    first = subprocess.Popen([sys.executable, "probe.py", "sleep", str(root / "pid-q"), "3"], cwd=root, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not (root / "pid-q").exists() or not (root / "pid-q").read_text():
        time.sleep(0.1)
    start = time.monotonic()
    second = run_probe(workspace, "0")
    assert second.stderr.strip() == "cold" and time.monotonic() - start < 2.5
    assert first.wait(timeout=30) == 0 and "warm" in first.stderr.read()


def test_a_killed_worker_takes_its_job_along(workspace):
    root, env = workspace
    wait_for_worker(workspace)
    pid_file = root / "pid-w"
    client = subprocess.Popen([sys.executable, "probe.py", "sleep", str(pid_file), "5"], cwd=root, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not pid_file.exists() or not pid_file.read_text():
        time.sleep(0.1)
    os.kill(_worker_pid(workspace), signal.SIGKILL)
    assert client.wait(timeout=30) == 1 and "warm worker stopped" in client.stderr.read()
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child):
        assert time.monotonic() < deadline, "the job outlived its worker"
        time.sleep(0.1)
    assert "slept" not in client.stdout.read()


def test_interpreter_flags_and_process_state_are_in_the_key():
    """A worker's child inherits these from the worker, not from its client: each must pick another worker."""
    env = {**os.environ, "PYTHONPATH": str(Path(warm.__file__).resolve().parents[1])}
    code = shlex.quote("from spanft import warm; print(warm.worker_key())")

    def key(setup: str = "", launcher: str = "", flags: str = "") -> str:
        shell = f"{setup} exec {launcher} {shlex.quote(sys.executable)} {flags} -c {code}"
        return subprocess.run(["bash", "-c", shell], env=env, capture_output=True, text=True, check=True).stdout

    plain = key()
    assert key() == plain
    for other in (key(flags="-O"), key(flags="-W error"), key(setup="umask 077;"), key(launcher="nice -n 3")):
        assert other != plain
