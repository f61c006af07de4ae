"""The README's generated blocks: every result it quotes, rewritten from the file that holds it.

A block is the text between ``<!-- spanft readme: NAME begin -->`` and ``<!-- spanft readme: NAME end -->``,
each marker on a line of its own. :data:`BLOCKS` names each block's source: the committed ``reports/``
(scores, gains, verdicts), ``benchmarks/RESULTS.md`` (measured times, the verdict test's calibration) and
``profiles/`` (``spanft plan``'s estimate). ``spanft readme`` rewrites them; ``tests/test_readme.py`` fails
when one differs from what the command would write. No pipeline stage writes the README.

The sources are read as committed at git HEAD (:func:`committed_sources`): a user's own ``dvc repro`` or
``dvc exp run -S`` rewrites ``reports/`` with this machine's numbers, which describe that run, not the one the
README quotes. ``spanft readme --workspace`` reads the working tree instead (after a run that is to be committed).
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from spanft.errors import SpanftError
from spanft.stage.textfile import block_lines, replace_lines, split_lines

README = "README.md"
RESULTS = "benchmarks/RESULTS.md"
FIX = "run `spanft readme` in the project root (it rewrites README.md's generated blocks)"
QUOTED_FIGURES = "Figures the README quotes"
SIGNIFICANCE = "The tests side by side"
STRESS = "Stress slices"
EQUAL_ARMS = "Equal arms"
DEGENERATE = "Degenerate seeds:"
SOURCES = ("reports", "profiles", "benchmarks")  # every block's source lies under these


# ------------------------------------------------------------------------------------------- blocks


def markers(name: str) -> tuple[str, str]:
    return f"<!-- spanft readme: {name} begin -->", f"<!-- spanft readme: {name} end -->"


_ANY_MARKER = re.compile(r"<!-- spanft readme: \S+ (?:begin|end) -->")


def _block(text: str, name: str, where: str) -> tuple[list[str], int, int]:
    """``text``'s lines (each with its own end) and the indexes of block ``name``'s two marker lines; an
    ambiguous block (two begins, a missing end, the end first, another block's marker inside) is refused."""
    lines = split_lines(text)
    begin, end = markers(name)
    first, last = block_lines(lines, begin, end, where, name, _ANY_MARKER)
    return lines, first, last


def find_block(text: str, name: str, where: str = README) -> str:
    """The body of block ``name`` in ``text`` (without its markers and final newline; lines joined by ``\\n``)."""
    lines, first, last = _block(text, name, where)
    return "\n".join(line.rstrip("\r\n") for line in lines[first + 1:last])


def replace_block(text: str, name: str, body: str, where: str = README) -> str:
    """``text`` with block ``name``'s body replaced by ``body``, its lines ending as the begin marker's line
    does; everything outside the block byte for byte unchanged."""
    lines, first, last = _block(text, name, where)
    return replace_lines(lines, first, last, body)


# ------------------------------------------------------------------------------------------- sources


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, stdin=subprocess.DEVNULL)


def committed(root: Path, relative: str) -> str:
    """The text of ``relative`` as committed at HEAD of the git repository at ``root``."""
    done = _git(root, "show", f"HEAD:{relative}")
    if done.returncode != 0:
        raise SpanftError(f"{relative}: not committed at HEAD of {root} (the README's numbers come from the "
                          f"committed file; `spanft readme --workspace` reads the working tree)")
    return done.stdout.decode("utf-8")


@contextmanager
def committed_sources(root: Path) -> Iterator[Path]:
    """A temporary project root holding :data:`SOURCES` as committed at HEAD of the git repository at ``root``."""
    listed = _git(root, "ls-tree", "--name-only", "HEAD")
    if listed.returncode != 0:
        raise SpanftError(f"{root}: no git repository with a commit (the README's blocks are written from the "
                          f"reports committed at HEAD); `spanft readme --workspace` reads the working tree")
    present = [name for name in SOURCES if name in listed.stdout.decode().split()]
    archive = _git(root, "archive", "--format=tar", "HEAD", *present).stdout if present else b""
    with tempfile.TemporaryDirectory(prefix="spanft-readme-") as folder:
        if archive:
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        yield Path(folder)


def _read(root: Path, relative: str) -> str:
    path = root / relative
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpanftError(f"{relative}: not found under {root} (the README's numbers come from it: "
                          f"`dvc repro`, or `git checkout` the committed file)") from None


def section(text: str, title: str, where: str = RESULTS) -> str:
    """The body of the one section (any heading level) whose title starts with ``title``, up to the next heading."""
    parts = re.split(r"^(#+ .*)$", text, flags=re.M)
    bodies = [parts[i + 1] for i in range(1, len(parts) - 1, 2) if parts[i].lstrip("#").startswith(f" {title}")]
    if len(bodies) != 1:
        raise SpanftError(f"{where}: {len(bodies) or 'no'} sections titled '{title}...'; exactly one is needed")
    return bodies[0].strip("\n")


def markdown_table(text: str, where: str) -> list[dict[str, str]]:
    """The rows of the first markdown table in ``text``, by header (cells stripped)."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("|")), len(lines))
    table = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        table.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    if len(table) < 2:
        raise SpanftError(f"{where}: no markdown table")
    return [dict(zip(table[0], row)) for row in table[2:]]


def _report_table(root: Path, name: str) -> list[dict[str, str]]:
    """The main table of ``reports/tables/<name>.md`` as the reader sees it (its cells, not the CSV's numbers,
    which hold 6 decimals and may round otherwise at a tie)."""
    relative = f"reports/tables/{name}.md"
    return markdown_table(_read(root, relative), relative)


def _one(rows: list[dict[str, str]], where: str, **match: str) -> dict[str, str]:
    found = [row for row in rows if all(row.get(key, "").startswith(value) for key, value in match.items())]
    if len(found) != 1:
        raise SpanftError(f"{where}: {len(found)} rows with {match}; expected exactly one")
    return found[0]


# ------------------------------------------------------------------------------------------- the blocks


def times_block(root: Path) -> str:
    """The first screen's times, from RESULTS.md's table of the figures the README quotes."""
    rows = markdown_table(section(_read(root, RESULTS), QUOTED_FIGURES), f"{RESULTS} '{QUOTED_FIGURES}'")
    parts = [f"{row['what']} {row['figure']} ({row['machine']}, at {row['commit']})" for row in rows]
    return f"Measured (`{RESULTS}`, \"{QUOTED_FIGURES}\", with the commands): " + "; ".join(parts) + "."


def plan_block(root: Path) -> str:
    from spanft.cost.estimate import profile_table  # pandas: only here

    return profile_table(root)


def verdicts_block(root: Path) -> str:
    """Each table's verdict, as ``reports/index.md`` prints it."""
    return section(_read(root, "reports/index.md"), "Verdicts", "reports/index.md")


TASK_TABLES = {"table5": "SNLI", "table8": "CoNLL-2003"}  # one task each, its dev column "Dev <metric>"


def scores_block(root: Path) -> str:
    """Each task's dev score, baseline and +SF, and the gain: the cells of Tables 1, 5 and 8."""
    lines = ["| task (dev metric) | backbone | baseline | +SF | SF − baseline [95% CI] |", "|---|---|---|---|---|"]
    rows = _report_table(root, "table1")
    for backbone in dict.fromkeys(row["Backbone"] for row in rows):
        arms = [_one(rows, "reports/tables/table1.md", Backbone=backbone, Method=method, Statistic=statistic)
                for method, statistic in (("baseline", "mean"), ("+SF", "mean"), ("+SF − baseline", "gain"))]
        for column in list(rows[0])[3:]:
            if not column.startswith("Avg"):
                lines.append(f"| {column} | {backbone} | " + " | ".join(arm[column] for arm in arms) + " |")
    for table, task in TASK_TABLES.items():
        rows = _report_table(root, table)
        column = next(key for key in rows[0] if key.startswith("Dev ") and "(paper)" not in key)
        for backbone in dict.fromkeys(row["Backbone"] for row in rows):
            arms = [_one(rows, f"reports/tables/{table}.md", Backbone=backbone, Method=method)[column]
                    for method in ("baseline", "+SF", "SF − baseline")]
            lines.append(f"| {task} ({column.removeprefix('Dev ')}) | {backbone} | " + " | ".join(arms) + " |")
    return "\n".join(lines)


def ablation_block(root: Path) -> str:
    """Table 6's dev means per method, as the table prints them."""
    rows = [row for row in _report_table(root, "table6") if row["Statistic"].startswith("mean")]
    columns = [key for key in rows[0] if key not in ("Statistic", "Avg (paper rule)")] if rows else []
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return "\n".join(lines + ["| " + " | ".join(row[key] for key in columns) + " |" for row in rows])


def significance_block(root: Path) -> str:
    """The verdict test beside the others, as ``bench_significance.py`` printed it into RESULTS.md, and the worst
    false-positive cell of every other story it measured (:func:`worst_stories`)."""
    results = _read(root, RESULTS)
    return f"{section(results, SIGNIFICANCE)}\n\n{worst_stories(results)}"


def _percent(cell: str) -> float:
    return float(cell.rstrip("%"))


def worst_stories(results: str) -> str:
    """``Worst Welch false-positive rate in every other story: ...`` from RESULTS.md's stress slices, equal arms
    and degenerate seeds sections."""
    parts = []
    stress = markdown_table(section(results, STRESS), RESULTS)
    worst = max(stress, key=lambda row: _percent(row["welch"]))
    parts.append(f"stress slices {worst['welch']}% ({worst['slice']}, {worst['metric']}, dev {worst['dev']})")
    equal = markdown_table(section(results, EQUAL_ARMS), RESULTS)
    worst = max(equal, key=lambda row: _percent(row["worst rate (quadrature)"]))
    parts.append(f"equal arms with unequal seed sds {worst['worst rate (quadrature)']} ({worst['seeds per arm']} "
                 f"seeds per arm, sd ratio {worst['at sd ratio']})")
    degenerate = markdown_table(section(results, DEGENERATE), RESULTS)
    for story in dict.fromkeys(row["story"] for row in degenerate):
        worst = max((r for r in degenerate if r["story"] == story), key=lambda row: _percent(row["welch size"]))
        parts.append(f"{story} seeds {worst['welch size']} ({worst['seeds']} seeds, spreads {worst['spreads']})")
    heading = re.search(rf"^#+ {DEGENERATE}.*?([\d,]+ experiments per row)", results, flags=re.M)
    count = f", {heading[1]}" if heading else ""
    return ("Worst Welch false-positive rate in every other story measured (benchmarks/RESULTS.md; degenerate "
            f"seeds{count}): " + "; ".join(parts))


BLOCKS: dict[str, Callable[[Path], str]] = {
    "times": times_block,
    "plan": plan_block,
    "verdicts": verdicts_block,
    "scores": scores_block,
    "ablation": ablation_block,
    "significance": significance_block,
}


def generated(root: Path) -> dict[str, str]:
    """Every block's body as ``spanft readme`` would write it."""
    return {name: make(root) for name, make in BLOCKS.items()}


def refreshed(text: str, root: Path, workspace: bool = False, where: str = README) -> tuple[str, list[str]]:
    """``text`` with every block rewritten, and the names of the blocks that changed: from the sources committed
    at HEAD of ``root``, or (``workspace``) from its working tree. An unclear block is refused before any
    source is read."""
    for name in BLOCKS:
        find_block(text, name, where)
    if workspace:
        bodies = generated(root)
    else:
        with committed_sources(root) as head:
            try:
                bodies = generated(head)
            except SpanftError as error:  # name the commit, not the temporary folder
                raise SpanftError(str(error).replace(f"under {head}", f"at git HEAD of {root}")) from None
    changed = []
    for name, body in bodies.items():
        if find_block(text, name, where) != body:
            changed.append(name)
            text = replace_block(text, name, body, where)
    return text, changed
