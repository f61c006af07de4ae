"""The bad-input sweep (README "When something is wrong"): every user mistake tried, one test each.

Each case runs the real command line and checks what the user sees: exit status 2, exactly one line
`spanft: error: ...` naming the file (and line) or the key, no traceback, and no output written (or the
output already there left intact). Running this file with `python tests/test_bad_input.py` prints the
README table from the messages the commands really print.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_local_layouts import tsv, write, write_glue  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = "out"  # every case's output path, relative to its working directory


@dataclass
class Case:
    """A mistake: ``setup(dir)`` writes the inputs, ``argv`` runs in ``dir``; ``expect`` must be in the message."""

    id: str
    mistake: str
    setup: Callable[[Path], None]
    argv: list[str]
    expect: str
    env: dict | None = None
    existing_output: bool = False  # an earlier complete output sits at OUT and must survive


def glue_with(change: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        write_glue(root / "glue")
        change(root / "glue")

    return setup


def cola_train(lines: list[str]) -> Callable[[Path], None]:
    return glue_with(lambda glue: write(glue / "CoLA/train.tsv", lines))


def sst2_train(lines: list[str]) -> Callable[[Path], None]:
    return glue_with(lambda glue: write(glue / "SST-2/train.tsv", ["sentence\tlabel", *lines]))


def non_utf8_sst2(glue: Path) -> None:
    (glue / "SST-2/train.tsv").write_bytes(b"sentence\tlabel\nfine words\t1\nbad \xff\xfe bytes\t0\n")


def snli_files(train_lines: list[str]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        ok = '{"gold_label": "neutral", "sentence1": "A vop sat .", "sentence2": "A vop rested ."}'
        write(root / "snli/snli_1.0_train.jsonl", train_lines)
        write(root / "snli/snli_1.0_dev.jsonl", [ok])
        write(root / "snli/snli_1.0_test.jsonl", [ok])

    return setup


def conll_files(train_lines: list[str]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        ok = ["-DOCSTART- -X- -X- O", "", "Zed NNP B-NP B-PER", "ran VBD B-VP O", ""]
        write(root / "conll/train.txt", train_lines)
        write(root / "conll/valid.txt", ok)
        write(root / "conll/test.txt", ok)

    return setup


def counts_file(lines: list[str]) -> Callable[[Path], None]:
    return lambda root: write(root / "counts.tsv", lines)


def params_with(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        tree = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
        change(tree)
        (root / "params.yaml").write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")

    return setup


def rename(tree: dict, old: str, new: str) -> None:
    tree[new] = tree.pop(old)


def nothing(root: Path) -> None:
    pass


def prepared_cola(root: Path) -> None:
    from spanft.cli import main

    main(["-q", "prepare-task", "cola", "--source", "synthetic", "--train-size", "16", "--eval-size", "8",
          "--test-size", "8", "--out", str(root / "data/tasks/cola")])


def prepare(task: str, data_dir: str) -> list[str]:
    return ["prepare-task", task, "--source", "local", "--data-dir", data_dir, "--out", OUT]


def finetune(*extra: str, backbone: str = "data/backbones/tiny") -> list[str]:
    return ["finetune", "--task", "cola", "--backbone", backbone, "--data", "data/tasks/cola", "--out", OUT, *extra]


CASES = [
    Case("tsv-columns", "GLUE TSV line with a missing column (CoLA)", cola_train([tsv("zq", 1, "", "Fine ."), tsv("zq", 1, "Short .")]),
         prepare("cola", "glue"), "glue/CoLA/train.tsv:2: expected 4 tab-separated fields, found 3"),
    Case("label-set", "label outside the task's label set (SST-2 label 2)", sst2_train([tsv("good", 1), tsv("odd", 2)]),
         prepare("sst2", "glue"), "glue/SST-2/train.tsv:3: label '2' is not one of"),
    Case("non-utf8-task", "non-UTF-8 bytes in a task file", glue_with(non_utf8_sst2),
         prepare("sst2", "glue"), "glue/SST-2/train.tsv:3: not valid UTF-8"),
    Case("jsonl", "malformed SNLI JSONL line", snli_files(['{"gold_label": "neutral", "sentence1": "A b .", "sentence2": "C d ."}', '{"gold_label": "neutral", ']),
         prepare("snli", "snli"), "snli/snli_1.0_train.jsonl:2: not valid JSON"),
    Case("conll-tag", "CoNLL line with an unknown NER tag", conll_files(["Zed NNP B-NP B-PER", "ran VBD B-VP B-XYZ", ""]),
         prepare("conll2003", "conll"), "conll/train.txt:2: NER tag 'B-XYZ' is not O or [BI]-PER/LOC/ORG/MISC"),
    Case("missing-file", "missing local file (no CoLA/dev.tsv)", glue_with(lambda glue: (glue / "CoLA/dev.tsv").unlink()),
         prepare("cola", "glue"), "CoLA/dev.tsv: cola"),
    Case("missing-dir", "missing local data directory", nothing, prepare("cola", "no/such/dir"),
         "no/such/dir: data directory not found"),
    Case("unknown-task", "unknown task", nothing, ["describe", "squad"], "unknown task 'squad'"),
    Case("unknown-backbone", "backbone directory missing (unknown backbone name)", prepared_cola, finetune("--variant", "baseline"),
         "backbone directory data/backbones/tiny not found"),
    Case("unknown-variant", "unknown variant", prepared_cola, finetune("--variant", "sff"), "unknown variant 'sff'"),
    Case("unknown-profile", "unknown profile", nothing, ["profile", "gpu", "--root", str(ROOT)],
         "unknown profile 'gpu'; available profiles: embedded, paper"),
    Case("dict-size-zero", "dict_size 0", counts_file(["a b\t5"]), ["build-dict", "counts.tsv", "--size", "0", "--out", OUT],
         "--size (dict_size) must be > 0, got 0", existing_output=True),
    Case("dict-size-too-big", "dict_size larger than the n-grams counted", counts_file(["a b\t5", "c d\t4"]),
         ["build-dict", "counts.tsv", "--size", "10", "--out", OUT],
         "counts.tsv: holds only 2 n-grams, fewer than the 10 asked for", existing_output=True),
    Case("counts-line", "counts file line without a tab", counts_file(["a b\t5", "c d 4"]),
         ["build-dict", "counts.tsv", "--size", "2", "--out", OUT], "counts.tsv:2:", existing_output=True),
    Case("non-utf8-corpus", "non-UTF-8 bytes in the corpus", lambda root: (root / "corpus.txt").write_bytes(b"ok line\n\xff\n"),
         ["count-ngrams", "corpus.txt", "--out", OUT], "corpus.txt:2: not valid UTF-8"),
    Case("params-typo", "params.yaml with a typo'd key", params_with(lambda tree: rename(tree, "dict_size", "dict_sise")),
         ["check-params"], "params.yaml: unknown key dict_sise (did you mean dict_size?)"),
    Case("params-dict-size", "params.yaml dict_size <= 0", params_with(lambda tree: tree.update(dict_size=-1)),
         ["check-params"], "params.yaml: dict_size must be a positive number of entries, found -1"),
    Case("params-backbone", "a study naming an undefined backbone", params_with(lambda tree: tree["studies"]["ner"].update(backbones=["bert-huge"])),
         ["check-params"], "params.yaml: studies.ner.backbones: 'bert-huge' is not defined under backbones"),
    Case("hub-offline-task", "hub task source without network", nothing,
         ["prepare-task", "cola", "--source", "hf", "--out", OUT], "cola",
         env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}),
    Case("hub-offline-backbone", "hub backbone without network", prepared_cola,
         finetune("--variant", "baseline", backbone="bert-base-uncased"), "backbone 'bert-base-uncased' could not be loaded",
         env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}),
]


def run_case(case: Case, workdir: Path) -> subprocess.CompletedProcess:
    case.setup(workdir)
    if case.existing_output:
        (workdir / OUT).write_text("complete earlier output\n", encoding="utf-8")
    env = {**os.environ, **(case.env or {}), "HF_HOME": str(workdir / "hf-home")}
    return subprocess.run([sys.executable, "-m", "spanft.cli", *case.argv], cwd=workdir, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_user_mistake_gives_one_line_and_writes_nothing(case: Case, tmp_path: Path):
    done = run_case(case, tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("spanft: error:")]
    assert len(errors) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert case.expect in errors[0], errors[0]
    if case.existing_output:
        assert (tmp_path / OUT).read_text(encoding="utf-8") == "complete earlier output\n"
    else:
        assert not (tmp_path / OUT).exists()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith((".out", "out.", ".tmp"))]
    assert leftovers == []


def markdown_table() -> str:
    """The README table, from what each command really prints."""
    import tempfile

    rows = ["| mistake | command | what you see (exit 2, nothing written) |", "|---|---|---|"]
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            done = run_case(case, Path(tmp))
        message = next(line for line in done.stderr.splitlines() if line.startswith("spanft: error:"))
        message = message.replace(str(ROOT), "<repo>")
        if len(message) > 160:
            message = message[:157] + "..."
        rows.append(f"| {case.mistake} | `spanft {' '.join(case.argv).replace(str(ROOT), '.')}` | `{message}` |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
