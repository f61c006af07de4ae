"""Safe outputs (what may be replaced, atomically, interrupted) and careful UTF-8 input, line by line."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanft.errors import SpanftError, run_command
from spanft.fileio import (
    OUTPUT_MARKER,
    atomic_open,
    atomic_path,
    check_output,
    read_text,
    read_text_lines,
    split_text_lines,
)

ROOT = Path(__file__).resolve().parents[1]


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def write_dir(target: Path, made_by: str = "prepare-task", **kwargs) -> None:
    with atomic_path(target, made_by=made_by, **kwargs) as tmp:
        tmp.mkdir()
        (tmp / "train.parquet").write_text("new", encoding="utf-8")


# ------------------------------------------------------------------------------------------- file outputs


def test_atomic_open_writes_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_open(target) as out:
            out.write("half")
            raise RuntimeError("stage failed")
    assert target.read_text() == "old\n"
    assert names(tmp_path) == ["out.txt"]
    with atomic_open(target) as out:  # a file output replaces the file of that name (our earlier output)
        out.write("new\n")
    assert target.read_text() == "new\n"


def test_a_file_output_never_replaces_a_directory(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "thesis.tex").write_text("mine")
    with pytest.raises(SpanftError, match="output .*results is a directory"):
        with atomic_open(tmp_path / "results") as out:
            out.write("x")
    assert names(tmp_path / "results") == ["thesis.tex"]


def test_a_failed_write_names_the_output_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "counts.tsv"
    target.write_text("earlier\n")
    with pytest.raises(SpanftError, match=r"counts.tsv: disk full \(no space left on device\) \(while writing it\)"):
        with atomic_open(target) as out:
            out.write("half")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # what write() raises: no file name
    assert target.read_text() == "earlier\n" and names(tmp_path) == ["counts.tsv"]


# -------------------------------------------------------------------------------------- directory outputs


def test_a_directory_output_carries_the_marker_and_replaces_only_its_own(tmp_path):
    target = tmp_path / "tasks" / "cola"
    write_dir(target)
    assert names(target) == [OUTPUT_MARKER, "train.parquet"]
    assert json.loads((target / OUTPUT_MARKER).read_text()) == {"made_by": "prepare-task", "files": ["train.parquet"]}
    write_dir(target)  # the same command's earlier output: replaced as a whole
    assert names(target) == [OUTPUT_MARKER, "train.parquet"]
    (target / "stale.parquet").write_text("not in the marker's list")
    with pytest.raises(SpanftError, match="holds stale.parquet, which `spanft prepare-task` did not write"):
        write_dir(target)  # a file the command did not write is never deleted (issue 32)
    (target / OUTPUT_MARKER).write_text(json.dumps({"made_by": "prepare-task"}))  # an older marker: no list
    write_dir(target)  # replaced as a whole, as before
    assert names(target) == [OUTPUT_MARKER, "train.parquet"]
    assert names(tmp_path / "tasks") == ["cola"]  # no temporary or swapped-out copy left


def test_a_users_directory_is_refused_and_kept(tmp_path):
    target = tmp_path / "results"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work")
    with pytest.raises(SpanftError, match=f"exists and was not written by spanft \\(no {OUTPUT_MARKER} inside\\)"):
        write_dir(target)
    assert (target / "thesis.tex").read_text() == "years of work" and names(tmp_path) == ["results"]


def test_an_empty_directory_is_used(tmp_path):
    (tmp_path / "out").mkdir()
    write_dir(tmp_path / "out")
    assert names(tmp_path / "out") == [OUTPUT_MARKER, "train.parquet"]


def test_another_commands_output_is_refused(tmp_path):
    write_dir(tmp_path / "model", made_by="backbone")
    with pytest.raises(SpanftError, match="holds the output of `spanft backbone`, not of `spanft finetune`"):
        write_dir(tmp_path / "model", made_by="finetune")


def test_a_symbolic_link_or_a_file_is_not_replaced_by_a_directory(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "keep.txt").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(SpanftError, match="is a symbolic link"):
        write_dir(tmp_path / "link")
    (tmp_path / "plain").write_text("x")
    with pytest.raises(SpanftError, match="exists and is not a directory"):
        write_dir(tmp_path / "plain")
    assert names(tmp_path / "real") == ["keep.txt"]


def test_a_failed_block_leaves_the_earlier_directory_whole(tmp_path):
    target = tmp_path / "run"
    write_dir(target, made_by="finetune")
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target, made_by="finetune") as tmp:
            tmp.mkdir()
            raise KeyboardInterrupt
    assert (target / "train.parquet").read_text() == "new" and names(tmp_path) == ["run"]


def test_outputs_never_touch_their_inputs(tmp_path):
    raw = tmp_path / "data" / "raw"
    raw.mkdir(parents=True)
    for output, relation in ((raw, "is also an input"), (raw / "prepared", "lies inside the input"),
                             (tmp_path / "data", "contains the input")):
        with pytest.raises(SpanftError, match=relation):
            check_output(output, inputs=[raw], made_by="prepare-task")
    assert check_output(tmp_path / "data" / "prepared", inputs=[raw], made_by="prepare-task")


def test_the_current_directory_and_the_repository_root_are_never_outputs(tmp_path, monkeypatch):
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    (tmp_path / "proj" / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "proj" / "sub")
    monkeypatch.delenv("DVC_ROOT", raising=False)
    for target, what in ((".", "the current directory"), ("", "the current directory"),
                         ("..", "the repository root"), ("../..", "the repository root")):
        with pytest.raises(SpanftError, match=f"(is|contains) {what}"):
            check_output(target, made_by="report")
    monkeypatch.setenv("DVC_ROOT", str(tmp_path / "proj" / "sub"))  # DVC names the root of a stage
    with pytest.raises(SpanftError, match="is the repository root"):
        check_output(".", made_by="report")
    assert check_output("fresh", made_by="report") == Path("fresh")


SIGTERM_WRITER = textwrap.dedent("""
    import os, signal, sys
    from spanft.errors import run_command
    from spanft.fileio import atomic_open, atomic_path

    def body():
        with atomic_open(sys.argv[1]) as out:
            out.write("half")
            with atomic_path(sys.argv[2], made_by="prepare-task") as tmp:
                tmp.mkdir()
                os.kill(os.getpid(), signal.SIGTERM)
                out.write("never")

    sys.exit(run_command(body))
""")


def test_sigterm_is_one_line_exit_143_and_leaves_no_temporary(tmp_path):
    (tmp_path / "counts.tsv").write_text("earlier\n")
    done = subprocess.run([sys.executable, "-c", SIGTERM_WRITER, "counts.tsv", "prepared"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 143
    assert done.stderr.splitlines() == ["spanft: error: terminated (SIGTERM)"]
    assert names(tmp_path) == ["counts.tsv"] and (tmp_path / "counts.tsv").read_text() == "earlier\n"


def test_a_killed_writers_temporary_is_swept_by_the_next_write(tmp_path):
    target = tmp_path / "counts.tsv"
    stale_file = tmp_path / ".counts.tsv.abc123.tmp"
    stale_file.write_text("half", encoding="utf-8")
    stale_dir = tmp_path / ".counts.tsv.def456.tmp"
    stale_dir.mkdir()
    other = tmp_path / ".other.tsv.abc123.tmp"
    other.write_text("not ours", encoding="utf-8")
    with atomic_open(target) as handle:
        handle.write("done\n")
    assert target.read_text(encoding="utf-8") == "done\n"
    assert not stale_file.exists() and not stale_dir.exists()
    assert other.exists()


def test_a_second_writer_leaves_a_running_writers_temporary_alone_and_is_refused(tmp_path):
    """Two writers of one output: the temporary of one still running (a real process) stays, the second is
    refused in one line; one whose writer has ended (a process that exited) is swept."""
    target = tmp_path / "counts.tsv"
    target.write_text("earlier\n", encoding="utf-8")
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    try:
        live = tmp_path / f".counts.tsv.{running.pid}-abc123.tmp"
        live.write_text("half of the first writer's output", encoding="utf-8")
        dead = tmp_path / f".counts.tsv.{ended.pid}-def456.tmp"
        dead.write_text("half", encoding="utf-8")
        with pytest.raises(SpanftError, match=rf"output {target} is being written by another process "
                                              rf"\(PID {running.pid}"):
            with atomic_open(target) as handle:
                handle.write("second\n")
        assert live.read_text(encoding="utf-8") == "half of the first writer's output"
        assert target.read_text(encoding="utf-8") == "earlier\n"
    finally:
        running.kill()
        running.wait()
    with atomic_open(target) as handle:  # the first writer gone: both temporaries are swept
        handle.write("done\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counts.tsv"]


# ------------------------------------------------------------------------------------- system errors


def _run(error: BaseException, capsys) -> tuple[int, list[str]]:
    def body():
        raise error

    status = run_command(body)
    return status, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("error, line", [
    (PermissionError(errno.EACCES, "Permission denied", "data/secret.txt"), "data/secret.txt: Permission denied"),
    (IsADirectoryError(errno.EISDIR, "Is a directory", "corpus"), "corpus: Is a directory"),
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "a\nb.txt"), "a\\nb.txt: No such file or directory"),
    (OSError(errno.ENOSPC, "No space left on device", "out.tsv"), "out.tsv: disk full (no space left on device)"),
    (SpanftError("params.yaml: bad\u2028key"), "params.yaml: bad\\u2028key"),
])
def test_every_error_is_one_line_naming_the_path(error, line, capsys):
    status, lines = _run(error, capsys)
    assert status == 2 and lines == [f"spanft: error: {line}"]


def test_ctrl_c_is_exit_130(capsys):
    assert _run(KeyboardInterrupt(), capsys) == (130, ["spanft: error: interrupted (Ctrl-C)"])


# ------------------------------------------------------------------------------------------------ input


def test_read_text_lines_names_file_and_line_on_bad_bytes(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes("\ufeffgood line\nsecond\n".encode() + b"bad \xff byte\n")
    lines = read_text_lines(path)
    assert next(lines) == (1, "good line")
    assert next(lines) == (2, "second")
    with pytest.raises(SpanftError, match=r"corpus.txt:3: not valid UTF-8"):
        next(lines)
    with pytest.raises(SpanftError, match=r"corpus.txt:3: not valid UTF-8"):
        read_text(path)


def test_missing_file_or_directory_is_one_line_error(tmp_path):
    with pytest.raises(SpanftError, match="nope.txt: corpus not found"):
        list(read_text_lines(tmp_path / "nope.txt", what="corpus"))
    with pytest.raises(SpanftError, match="corpus expected, found a directory"):
        list(read_text_lines(tmp_path, what="corpus"))


def test_only_newlines_end_lines(tmp_path):
    text = "a\x0cb\r\nc\x0bd\u2028e\x1cf\rg\n\nlast"
    path = tmp_path / "odd.txt"
    path.write_bytes(text.encode())
    assert [line for _, line in read_text_lines(path)] == ["a\x0cb", "c\x0bd\u2028e\x1cf\rg", "", "last"]
    assert split_text_lines(text) == ["a\x0cb", "c\x0bd\u2028e\x1cf\rg", "", "last"]


def _lines_by_stringio(text: str) -> list[str]:
    """Independent oracle: io splits on "\\n" only when given newline="\\n"; one "\\r" before it is dropped."""
    lines = []
    for line in io.StringIO(text, newline="\n"):
        if line.endswith("\n"):
            line = line[:-2] if line.endswith("\r\n") else line[:-1]
        lines.append(line)
    return lines


ODD = st.lists(st.sampled_from(["a", "é", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029",
                               "\r\n"]), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=ODD)
def test_line_splitting_matches_the_oracle(tmp_path_factory, text):
    assert split_text_lines(text) == _lines_by_stringio(text)
    path = tmp_path_factory.mktemp("lines") / "f.txt"
    path.write_bytes(text.encode())
    assert [line for _, line in read_text_lines(path)] == _lines_by_stringio(text)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hops=st.integers(1, 4), absolute=st.booleans(), exists=st.booleans())
def test_a_file_output_is_written_through_a_chain_of_links_as_cp_does(tmp_path_factory, hops, absolute, exists):
    """Oracle: `cp` itself, on a twin of the same links (POSIX cp: GNU's refuses a dangling link by default,
    which spanft creates, as POSIX cp does)."""
    results = []
    for writer in ("spanft", "cp"):
        root = tmp_path_factory.mktemp(writer)
        (root / "real").mkdir()
        if exists:
            (root / "real" / "file.txt").write_text("old\n", encoding="utf-8")
        target = root / "real" / "file.txt"
        for hop in range(hops):  # link0 -> link1 -> ... -> real/file.txt
            link = root / f"link{hop}"
            nxt = target if hop == hops - 1 else root / f"link{hop + 1}"
            link.symlink_to(nxt if absolute else os.path.relpath(nxt, root))
        (root / "new.txt").write_text("new\n", encoding="utf-8")
        if writer == "spanft":
            with atomic_open(root / "link0") as handle:
                handle.write("new\n")
        else:
            subprocess.run(["cp", str(root / "new.txt"), str(root / "link0")], check=True,
                           env={**os.environ, "POSIXLY_CORRECT": "1"})
        results.append(sorted((str(p.relative_to(root)), p.is_symlink(), p.read_text(encoding="utf-8") if p.is_file() else None)
                              for p in root.rglob("*")))
    assert results[0] == results[1]
