"""Issue 52, item 3: a command that rewrites a user's file touches only its own text (`spanft readme`, `spanft
dvc-yaml`, `spanft profile`). An ambiguous block is refused in one line naming the file, the block and the lines,
and nothing changes; every line keeps its end (CRLF, LF, mixed line by line), a byte-order mark and the file's
mode stay; a byte that is not UTF-8 is one line, no traceback."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_readme import _project  # noqa: E402

from spanft.cli import main  # noqa: E402
from spanft.readme import markers, refreshed  # noqa: E402
from spanft.stage.dvc_yaml import BEGIN, END, finetune_section, write_finetune_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BOM = b"\xef\xbb\xbf"


@pytest.fixture(scope="module")
def readme() -> str:
    """This repository's README with every block as `spanft readme` writes it now."""
    return refreshed((ROOT / "README.md").read_text(encoding="utf-8"), ROOT)[0]


def stale(text: str, name: str = "scores") -> str:
    begin, end = markers(name)
    start, stop = text.index(begin + "\n") + len(begin) + 1, text.index(end)
    return text[:start] + "| old | block |\n" + text[stop:]


def refused(capsys, argv: list[str], path: Path, *where: str) -> None:
    before = path.read_bytes()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("spanft: error: "), err
    for part in where:
        assert part in err, err
    assert path.read_bytes() == before


# --------------------------------------------------------------------------------------------- spanft readme


def test_a_begin_marker_pasted_twice_is_refused_and_the_text_between_kept(tmp_path, capsys, readme):
    begin, _ = markers("scores")
    text = readme.replace(begin + "\n", f"{begin}\nMy notes, which must stay.\n\n{begin}\n", 1)
    root = _project(tmp_path, text)
    first = text[:text.index(begin)].count("\n") + 1
    refused(capsys, ["readme", "--root", str(root)], root / "README.md",
            f"{root / 'README.md'}: generated block 'scores' is not one clear block: "
            f"2 begin markers (lines {first}, {first + 3})",
            "nothing was changed")


@pytest.mark.parametrize("how", ["missing end", "end first", "another block inside"])
def test_an_ambiguous_block_is_refused_naming_its_lines(tmp_path, capsys, readme, how):
    begin, end = markers("scores")
    if how == "missing end":
        text, expect = readme.replace(end + "\n", "", 1), "no end marker"
    elif how == "end first":
        text, expect = readme.replace(begin + "\n", "@@", 1).replace(end + "\n", begin + "\n", 1), "comes before"
        text = text.replace("@@", end + "\n", 1)
    else:
        other_begin, other_end = markers("ablation")
        chunk = readme[readme.index(other_begin):readme.index(other_end) + len(other_end) + 1]
        text = readme.replace(chunk, "", 1).replace(end + "\n", chunk + end + "\n", 1)
        expect = "another block's marker"
    root = _project(tmp_path, text)
    refused(capsys, ["readme", "--root", str(root)], root / "README.md", "'scores' is not one clear block", expect,
            "line")


@pytest.mark.parametrize("style", ["crlf", "mixed"])
def test_line_ends_byte_order_mark_and_mode_are_kept(tmp_path, capsys, readme, style):
    lines = stale(readme).split("\n")
    if style == "crlf":
        data = "\r\n".join(lines).encode()
        expected = "\r\n".join(readme.split("\n")).encode()
    else:  # every third line CRLF, the rest LF: each line keeps its own end
        ends = ["\r\n" if n % 3 == 0 else "\n" for n in range(len(lines))]
        data = "".join(a + b for a, b in zip(lines, ends + [""])).encode()
        begin = markers("scores")[0]
        index = lines.index(begin)
        new_body = refreshed(readme, ROOT)[0]  # as generated, lines within the block end as its begin line
        expected_lines = new_body.split("\n")
        body_end = ends[index]
        expected = []
        for n, line in enumerate(expected_lines):
            if n <= index:
                expected.append(line + (ends[n] if n < len(expected_lines) - 1 else ""))
        tail = lines[lines.index(markers("scores")[1]):]
        tail_ends = ends[lines.index(markers("scores")[1]):]
        body = expected_lines[index + 1:len(expected_lines) - len(tail)]
        expected = "".join(expected) + "".join(line + body_end for line in body) + \
            "".join(a + b for a, b in zip(tail, tail_ends + [""]))
        expected = expected.encode()
    root = _project(tmp_path, "")
    (root / "README.md").write_bytes(BOM + data)
    os.chmod(root / "README.md", 0o640)
    assert main(["readme", "--workspace", "--root", str(root)]) == 0
    assert "rewrote scores" in capsys.readouterr().out
    assert (root / "README.md").read_bytes() == BOM + expected
    assert stat.S_IMODE((root / "README.md").stat().st_mode) == 0o640


def test_a_readme_that_is_not_utf8_is_one_line(tmp_path, capsys, readme):
    root = _project(tmp_path, "")
    data = stale(readme).encode().replace(b"Span", b"Sp\xe4n", 1)
    (root / "README.md").write_bytes(data)
    line = data[:data.index(b"\xe4")].count(b"\n") + 1
    refused(capsys, ["readme", "--root", str(root)], root / "README.md",
            f"README.md:{line}: not valid UTF-8 (byte 0xe4")


# ------------------------------------------------------------------------------------------ spanft dvc-yaml


def _dvc_yaml(tmp_path: Path) -> tuple[Path, str]:
    text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    path = tmp_path / "dvc.yaml"
    return path, text.replace("/sf/seed${item.seed}", "/SF/seed${item.seed}", 1)


def test_dvc_yaml_keeps_mixed_line_ends_byte_order_mark_and_mode(tmp_path):
    path, text = _dvc_yaml(tmp_path)
    lines = text.split("\n")
    inside = range(lines.index(BEGIN), lines.index(END) + 1)
    ends = ["\r\n" if n % 2 and n not in inside else "\n" for n in range(len(lines))]
    path.write_bytes(BOM + "".join(a + b for a, b in zip(lines, ends + [""])).encode())
    os.chmod(path, 0o600)
    assert write_finetune_section(path) is True
    fixed = (ROOT / "dvc.yaml").read_text(encoding="utf-8").split("\n")
    assert path.read_bytes() == BOM + "".join(a + b for a, b in zip(fixed, ends + [""])).encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert finetune_section() in path.read_bytes().decode("utf-8")


@pytest.mark.parametrize("how, expect", [("end first", "comes before its begin"),
                                         ("two begins", "2 begin markers (lines"),
                                         ("not utf-8", "not valid UTF-8 (byte 0xff")])
def test_dvc_yaml_refuses_in_one_line_and_changes_nothing(tmp_path, how, expect):
    path, text = _dvc_yaml(tmp_path)
    if how == "end first":
        text = text.replace(BEGIN, "@@").replace(END, BEGIN).replace("@@", END)
    elif how == "two begins":
        text = text.replace(BEGIN, f"{BEGIN}\n  # my note\n{BEGIN}")
    data = text.encode() if how != "not utf-8" else text.encode().replace(b"stages:", b"stages:\xff", 1)
    path.write_bytes(data)
    done = subprocess.run([sys.executable, "-m", "spanft.cli", "dvc-yaml", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and expect in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and path.read_bytes() == data


# ------------------------------------------------------------------------------------------- spanft profile


@pytest.mark.parametrize("end", ["\r\n", "\n"])
def test_profile_keeps_the_params_files_line_ends_byte_order_mark_and_mode(tmp_path, end):
    (tmp_path / "profiles").mkdir()
    profile = (ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8")
    (tmp_path / "profiles" / "embedded.yaml").write_text(profile, encoding="utf-8")
    params = tmp_path / "params.yaml"
    params.write_bytes(BOM + "profile: old\n".replace("\n", end).encode() * 3)
    os.chmod(params, 0o600)
    assert main(["profile", "embedded", "--root", str(tmp_path)]) == 0
    assert params.read_bytes() == BOM + profile.replace("\n", end).encode()
    assert stat.S_IMODE(params.stat().st_mode) == 0o600
