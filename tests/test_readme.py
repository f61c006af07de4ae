"""The README quotes no number that its source does not hold (issue 45): every result sits in a generated block
that `spanft readme` writes from the committed reports/, benchmarks/RESULTS.md and profiles/. Reads them as
committed at git HEAD (`git show`), never the working tree's reports/, which a user's own `dvc repro` or
`dvc exp run -S` rewrites with this machine's numbers: no repro."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from spanft.cli import main
from spanft.errors import SpanftError
from spanft.readme import (
    BLOCKS,
    FIX,
    QUOTED_FIGURES,
    RESULTS,
    committed,
    committed_sources,
    find_block,
    generated,
    markdown_table,
    markers,
    replace_block,
    section,
)

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def head():
    """reports/, profiles/ and benchmarks/ as committed at HEAD: what the README quotes, whatever ran since."""
    with committed_sources(ROOT) as folder:
        yield folder


@pytest.mark.parametrize("name", list(BLOCKS))
def test_every_generated_block_is_what_spanft_readme_writes(name, head):
    expected = BLOCKS[name](head)
    assert find_block(README, name) == expected, (
        f"README.md's generated block '{name}' differs from its source; {FIX}. It should read:\n{expected}")


def test_no_number_sits_in_the_readme_outside_a_generated_block_but_the_ones_named_here():
    # prose may name params and design figures (95%, 80% power, 0.05, Table 1...), never a score, gain or time:
    # a decimal number outside the blocks is one the reports or RESULTS.md would have to hold
    text = README
    for name in BLOCKS:
        begin, end = markers(name)
        text = re.sub(rf"{re.escape(begin)}.*?{re.escape(end)}", "", text, flags=re.S)
    decimals = set(re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", text))
    allowed = {"2.13.0", "0.05", "0.0", "0.975", "2108.12848"}  # torch's pin; the p-value line and Welch's
    # quantile t(0.975, df); "never prints as 0.0"; the paper's arXiv id
    assert decimals <= allowed, sorted(decimals - allowed)
    assert not re.search(r"\b\d+ (?:min|s|tests?|passed)\b", text), re.search(r"\b\d+ (?:min|s|tests?|passed)\b", text)


def test_each_quoted_time_stands_in_the_output_its_benchmark_printed():
    results = (ROOT / RESULTS).read_text(encoding="utf-8")
    rows = markdown_table(section(results, QUOTED_FIGURES), QUOTED_FIGURES)
    assert {row["what"] for row in rows} == {"`dvc repro`", "`pytest`"}
    for row in rows:
        assert row["figure"] and row["figure"] in row["as printed"], row
        assert row["as printed"] in section(results, row["section"]), (
            f"RESULTS.md: '{row['as printed']}' is not in the section '{row['section']}' that recorded it")
        assert re.fullmatch(r"[0-9a-f]{7,40}", row["commit"]), row["commit"]


def test_the_first_screen_runs_what_ci_runs():
    # .ci/run installs and tests "exactly as the README says": its commands are the first screen's
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line and not line.startswith(("#", "set ", "cd "))]
    first = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first and first.start() < README.index("## Contents")
    commands = [line.split("#")[0].strip() for line in first.group(1).splitlines()]
    assert ci and all(command in commands for command in ci), (ci, commands)
    assert "dvc repro" in commands
    assert README.index(markers("times")[0]) < README.index("## Contents")


def test_the_scores_are_the_reports_csv_numbers_rounded():
    # an independent path to the same runs: the CSVs' 6 decimals, not the markdown cells the block copies
    ours = {}
    for table, task in (("table1", None), ("table5", "snli"), ("table8", "conll2003")):
        for row in csv.DictReader(io.StringIO(committed(ROOT, f"reports/tables/{table}.csv"))):
            if row["statistic"] == "ours" and row["split"].startswith("validation"):
                ours[row["backbone"], (task or row["column"]).replace("-", ""), row["method"]] = float(row["mean_pct"])
    block = markdown_table(find_block(README, "scores"), "scores")
    keys = [(row["backbone"].split(" (")[0], row["task (dev metric)"].split(" (")[0].lower().replace("-", ""))
            for row in block]
    assert sorted(keys) == sorted({key[:2] for key in ours})  # every task of every backbone, once
    for key, row in zip(keys, block):
        for method, cell in (("baseline", row["baseline"]), ("sf", row["+SF"])):
            assert abs(float(cell) - ours[(*key, method)]) <= 0.05 + 1e-9, (key, method, cell)


def test_the_verdicts_are_the_reports(tmp_path):
    verdicts = list(csv.DictReader(io.StringIO(committed(ROOT, "reports/tables/verdicts.csv"))))
    lines = find_block(README, "verdicts").splitlines()
    assert len(lines) == len(verdicts)
    for line, row in zip(lines, verdicts):
        assert line.startswith(f"- Table {row['table']}, **{row['verdict']}** — {row['subject']}"), line


def _project(tmp_path: Path, readme: str) -> Path:
    """A project root whose sources are this repo's as committed (copied: the test may edit them; the working
    tree's reports/ may be a user's own run) and README ``readme``."""
    with committed_sources(ROOT) as head:
        for folder in ("reports", "profiles", "benchmarks"):
            shutil.copytree(head / folder, tmp_path / folder)
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    return tmp_path


def test_spanft_readme_rewrites_a_stale_block_and_check_names_it(tmp_path, capsys):
    stale = replace_block(README, "scores", "| task | old |\n|---|---|\n| CoLA | 28.6 |")
    root = _project(tmp_path, stale)
    assert main(["readme", "--check", "--workspace", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stale generated blocks: scores;" in err and "`spanft readme`" in err
    assert (root / "README.md").read_text(encoding="utf-8") == stale  # --check writes nothing
    assert main(["readme", "--workspace", "--root", str(root)]) == 0
    assert (root / "README.md").read_text(encoding="utf-8") == README
    assert main(["readme", "--check", "--workspace", "--root", str(root)]) == 0


def _change_table6(root: Path) -> None:
    """Table 6's +CNN dev mean reads 12.3, as another run's report would."""
    table6 = root / "reports/tables/table6.md"
    text = table6.read_text(encoding="utf-8")
    cnn = next(line for line in text.splitlines() if "+CNN (no segmentation)" in line and "mean" in line)
    cells = cnn.split("|")
    cells[4] = cells[4].replace(cells[4].strip(), "12.3")
    table6.write_text(text.replace(cnn, "|".join(cells)), encoding="utf-8")


def test_a_changed_report_changes_the_readme(tmp_path):
    root = _project(tmp_path, README)
    _change_table6(root)
    assert "| +CNN (no segmentation) | 12.3 |" in generated(root)["ablation"]
    assert main(["readme", "--workspace", "--root", str(root)]) == 0
    assert "| +CNN (no segmentation) | 12.3 |" in (root / "README.md").read_text(encoding="utf-8")


def test_a_missing_block_or_source_is_one_line(tmp_path, capsys):
    with pytest.raises(SpanftError, match=r"README.md: generated block 'scores' is not one clear block: no begin "
                                          r"markers; no end markers"):
        find_block("no blocks here\n", "scores")
    twice = README + "\n" + "\n".join(markers("scores")) + "\n"
    with pytest.raises(SpanftError, match=r"'scores' is not one clear block: 2 begin markers \(lines \d+, \d+\); 2 end markers"):
        find_block(twice, "scores")
    root = _project(tmp_path, README)
    (root / "reports/tables/table8.md").unlink()
    assert main(["readme", "--workspace", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "reports/tables/table8.md: not found" in err
    assert (root / "README.md").read_text(encoding="utf-8") == README


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True,
                   capture_output=True)


def test_a_run_of_your_own_leaves_the_readme_right_until_you_ask_for_the_working_tree(tmp_path, capsys):
    # the user's `dvc repro` rewrites reports/ with this machine's numbers: the README still quotes HEAD's
    root = _project(tmp_path, README)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "committed reports")
    _change_table6(root)
    assert main(["readme", "--check", "--root", str(root)]) == 0
    assert main(["readme", "--check", "--workspace", "--root", str(root)]) == 1
    assert "stale generated blocks: ablation;" in capsys.readouterr().err
    assert main(["readme", "--root", str(root)]) == 0
    assert (root / "README.md").read_text(encoding="utf-8") == README  # HEAD's numbers, not this run's
    assert main(["readme", "--check", "--root", str(tmp_path / "nowhere")]) == 2  # no README there


def test_a_project_outside_git_is_told_to_read_the_working_tree(tmp_path, capsys):
    root = _project(tmp_path, README)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)  # a repository without a commit
    assert main(["readme", "--check", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no git repository with a commit" in err and "--workspace" in err


def test_no_stage_writes_the_readme():
    # a stage touches only what dvc.yaml declares: the README is rewritten by `spanft readme`, never by a stage
    stage_code = [*(ROOT / "pipeline").glob("*.py"), *(ROOT / "src/spanft").rglob("*.py")]
    for path in stage_code:
        if path.parent.name != "cli" and path.name != "readme.py":
            text = path.read_text(encoding="utf-8")
            assert "spanft.readme" not in text and "README.md" not in text, path
    assert "README" not in str(yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8")))  # comments aside


def test_a_checkout_with_crlf_line_ends_is_up_to_date(tmp_path, capsys):
    """Git for Windows' default `core.autocrlf true` checks out (and `git archive` writes) every text file with
    CRLF: the README's blocks read the same, so `spanft readme --check` and the suite pass there too."""
    root = _project(tmp_path, README)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "committed reports")
    _git(root, "config", "core.autocrlf", "true")
    for path in [root / "README.md", *(root / "reports").rglob("*.md")]:
        path.unlink()
    _git(root, "checkout", "--", ".")
    assert (root / "README.md").read_bytes().count(b"\r\n") == README.count("\n")  # the checkout is CRLF
    for workspace in ([], ["--workspace"]):
        assert main(["readme", "--check", "--root", str(root), *workspace]) == 0, capsys.readouterr().err
        assert main(["readme", "--root", str(root), *workspace]) == 0
        assert (root / "README.md").read_bytes() == README.replace("\n", "\r\n").encode("utf-8")
