"""A warm interpreter for the stage scripts: import torch and transformers once per ``dvc repro``, not per stage.

``dvc repro`` starts one Python process per stage, and each fine-tuning stage spends ~5.5 s of its ~15 s
importing torch and transformers' modelling code (measured on 2 cores). The first stage script to run
starts a worker in the background that imports them once; every later stage script of the same workspace
hands its command line to that worker, which forks a child to run it, the heavy modules already loaded.
The child runs the script exactly as a fresh process would (same argv, working directory, environment,
stdin/stdout/stderr, exit status; seeds are set by the run, so outputs are the same bytes).

A worker serves one key (:func:`worker_key`: interpreter and flags, ``sys.path``, environment, the spanft
sources and preloaded libraries by size and mtime, inherited process state), so an edited source file,
another virtual environment or another workspace gets its own worker and never stale code. It runs one job
at a time (a client that comes meanwhile runs cold), its job dies with it, and it exits after
``SPANFT_WARM_IDLE`` seconds (default 60) without a job.
Never used on GPU machines (CUDA does not survive a fork), under torchrun/accelerate, off Linux, or with
``SPANFT_WARM=0``; then every stage runs cold, as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

# Imported by the worker before it takes jobs: what stage scripts import inside their functions.
PRELOAD = ("torch", "transformers", "transformers.trainer", "transformers.modeling_utils", "datasets", "pandas",
           "pyarrow.parquet", "tokenizers", "spanft.train.finetune", "spanft.model.backbone", "spanft.data.prepare",
           "spanft.text.segmentation", "spanft.report.build")
_VOLATILE_ENV = {"DVC_STAGE", "PWD", "OLDPWD", "_", "SHLVL"}  # differ from stage to stage, read by no import
_LAUNCHER_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE")  # torchrun / accelerate launch: one process per device
_CHILD_FLAG = "SPANFT_WARM_CHILD"
_PACKAGE = Path(__file__).resolve().parent
_LIBRARIES = ("torch", "transformers", "tokenizers", "datasets", "accelerate", "pandas", "pyarrow", "numpy")


def enabled() -> bool:
    """Whether stage scripts may use a warm worker here (see the module docstring)."""
    return (os.environ.get("SPANFT_WARM", "1") != "0" and sys.platform.startswith("linux")
            and not os.environ.get(_CHILD_FLAG) and not any(os.environ.get(v) for v in _LAUNCHER_ENV)
            and not os.path.exists("/dev/nvidiactl"))


def worker_key() -> str:
    """What a worker's child inherits from it rather than from its client; a different key, another worker.

    The interpreter, its flags and path, the environment, the spanft sources and the installed libraries the
    worker preloads (by their files' size and mtime), and the process state a fork passes on (CPU affinity,
    priority, resource limits, umask, cgroup).
    """
    env = {k: v for k, v in os.environ.items() if k not in _VOLATILE_ENV}
    code = [_stat(p) for p in sorted(_PACKAGE.rglob("*.py"))]
    libraries = [_stat(Path(spec.origin)) for name in _LIBRARIES
                 if (spec := importlib.util.find_spec(name)) is not None and spec.origin]
    blob = json.dumps([sys.executable, sys.version, sys.path, sys.flags, sys.warnoptions, sys._xoptions, env, code,
                       libraries, _process_state()], default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _stat(path: Path) -> tuple[str, int, int]:
    info = path.stat()
    return str(path), info.st_size, info.st_mtime_ns


def _process_state() -> list:
    import resource

    umask = os.umask(0o022)
    os.umask(umask)
    limits = [resource.getrlimit(getattr(resource, n)) for n in dir(resource) if n.startswith("RLIMIT_")]
    try:
        cgroup = Path("/proc/self/cgroup").read_text()
    except OSError:
        cgroup = ""
    return [sorted(os.sched_getaffinity(0)), os.getpriority(os.PRIO_PROCESS, 0), limits, umask, cgroup,
            os.getuid(), os.getgid(), os.getgroups()]


def _worker_dir() -> Path | None:
    """A private directory for sockets and logs (``None`` if it cannot be made ours alone)."""
    path = Path(tempfile.gettempdir()) / f"spanft-warm-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not path.is_dir() or path.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return path


def delegate() -> int | None:
    """Run this stage script in a warm worker: its exit status, or ``None`` to run it here (cold).

    When no worker is up, one is started for the next stages and this one runs cold.
    """
    if not enabled():
        return None
    directory = _worker_dir()
    if directory is None:
        return None
    key = worker_key()
    sock_path, lock_path = directory / f"{key}.sock", directory / f"{key}.lock"
    conn = _connect(sock_path)
    if conn is None:
        _start_worker(sock_path, lock_path, directory / f"{key}.log")
        return None
    with conn:
        child = _submit(conn)
        return None if child is None else _wait_for_status(conn, child)


def _connect(sock_path: Path) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(sock_path))
    except OSError:
        conn.close()
        return None
    return conn


def _start_worker(sock_path: Path, lock_path: Path, log_path: Path) -> None:
    if _lock_is_held(lock_path):
        return  # a worker is starting: it takes the next stage
    with open(log_path, "ab") as log:
        subprocess.Popen([sys.executable, "-m", "spanft.warm", str(sock_path), str(lock_path)],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})


def _lock_is_held(lock_path: Path) -> bool:
    with open(lock_path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


# ---------------------------------------------------------------- the client side of one job

def _submit(conn: socket.socket) -> int | None:
    """Send this process's job (argv, cwd, environment, stdio): the child's pid, or ``None`` if not taken."""
    request = json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ), "path": sys.path}).encode()
    try:
        socket.send_fds(conn, [struct.pack("!Q", len(request)) + request], [0, 1, 2])
        return _read_int(conn)  # None: the worker was shutting down; the job never started
    except OSError:
        return None


def _wait_for_status(conn: socket.socket, child: int) -> int:
    forward = lambda signum, frame: _kill(child, signum)  # noqa: E731
    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        status = _read_int(conn)
    except OSError:
        status = None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if status is None:
        _kill(child, signal.SIGKILL)  # never let the job outlive what its caller was told
        print("spanft: error: the warm worker stopped during the run (SPANFT_WARM=0 runs stages cold)",
              file=sys.stderr)
        return 1
    if status < 0:  # the job was killed by signal -status: end the same way, as a fresh process would have
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        return 128 - status
    return status


def _kill(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _read_int(conn: socket.socket) -> int | None:
    data = b""
    while len(data) < 4:
        chunk = conn.recv(4 - len(data))
        if not chunk:
            return None
        data += chunk
    return struct.unpack("!i", data)[0]


# ---------------------------------------------------------------- the worker

def serve(sock_path: Path, lock_path: Path) -> None:
    """Preload, then run jobs one at a time until idle for ``SPANFT_WARM_IDLE`` seconds."""
    lock = open(lock_path, "a")  # held for the worker's life: one worker per key
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return
    import importlib

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))  # leave no socket or lock file behind
    for module in PRELOAD:
        try:
            importlib.import_module(module)
        except Exception as exc:  # the job that needs it will import it (and fail) as a cold run would
            print(f"spanft warm worker: not preloaded: {module}: {exc!r}", file=sys.stderr, flush=True)
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()  # left by a worker that was killed
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    ours = {sock_path: sock_path.stat().st_ino, lock_path: os.fstat(lock.fileno()).st_ino}
    server.listen(8)
    server.settimeout(float(os.environ.get("SPANFT_WARM_IDLE", "60")))
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                break
            with conn:
                try:
                    _serve_job(conn, server, lock)
                except Exception as exc:  # one bad request must not end the worker
                    print(f"spanft warm worker: job failed to start: {exc!r}", file=sys.stderr, flush=True)
    finally:
        server.close()
        for path, inode in ours.items():  # a newer worker's files, under the same names, are not ours to remove
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_ino == inode:
                    path.unlink()
        log = sock_path.with_suffix(".log")
        with contextlib.suppress(FileNotFoundError):
            if not log.stat().st_size:
                log.unlink()


def _serve_job(conn: socket.socket, server: socket.socket, lock) -> None:
    conn.settimeout(None)
    message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    length = struct.unpack("!Q", message[:8])[0]
    payload = message[8:]
    while len(payload) < length:
        chunk = conn.recv(length - len(payload))
        if not chunk:
            return
        payload += chunk
    request = json.loads(payload)
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            for handle in (server, conn, lock):
                handle.close()
            status = _child(request, fds)
        finally:
            os._exit(status)  # whatever happened, the child never returns into the worker's loop
    for fd in fds:
        os.close(fd)
    conn.sendall(struct.pack("!i", pid))
    conn.sendall(struct.pack("!i", _wait(pid, conn, server)))


def _wait(pid: int, conn: socket.socket, server: socket.socket) -> int:
    """The child's exit status (minus the signal that killed it). The child is killed if its client goes away;
    a client that comes meanwhile is turned away at once (it runs cold) rather than queued behind this job."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        readable, _, _ = select.select([conn, server], [], [], 0.2)
        if server in readable:
            server.accept()[0].close()
        if conn in readable and not conn.recv(1, socket.MSG_PEEK):
            _kill(pid, signal.SIGKILL)


def _child(request: dict, fds: list[int]) -> int:
    import runpy

    _die_with_parent()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)
    sys.stdout.reconfigure(line_buffering=os.isatty(1))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"], **{_CHILD_FLAG: "1"})
    sys.path[:] = request["path"]
    sys.argv[:] = request["argv"]
    script = os.path.abspath(sys.argv[0])  # __file__ as a fresh interpreter sets it
    try:
        runpy.run_path(script, run_name="__main__")
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:  # as the interpreter does: end by SIGINT, after the usual shutdown
        status = -signal.SIGINT
    except BaseException as exc:  # a traceback and status 1, as a fresh interpreter would
        import traceback

        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:  # from the script's frame on
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb or exc.__traceback__)
        status = 1
    return _shut_down(status)


def _shut_down(status: int) -> int:
    """What the interpreter does at exit: join non-daemon threads, run atexit handlers, flush stdio."""
    import atexit
    import threading

    with contextlib.suppress(BaseException):
        threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (s for s in (sys.stdout, sys.stderr) if not s.closed):
        try:
            stream.flush()
        except Exception:  # a reader that left (EPIPE): the interpreter's exit status for a failed flush
            status = 120
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status & 0xFF


def _die_with_parent() -> None:
    """SIGKILL this process when the worker ends (PR_SET_PDEATHSIG): a job never outlives its worker."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() == 1:
        os._exit(1)  # the worker ended before the call took effect


if __name__ == "__main__":
    serve(Path(sys.argv[1]), Path(sys.argv[2]))
