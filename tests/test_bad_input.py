"""The bad-input sweep (README "When something is wrong"): every user mistake tried, one test each.

Each case runs the real command line in a fresh directory and checks what the user sees. A mistake: the
expected exit status (2; 130 on Ctrl-C, 143 on SIGTERM), exactly one line `spanft: error: ...` naming the
culprit (file and line, key, path), no traceback from any process, and nothing in the directory changed:
no output, no temporary, inputs and earlier outputs byte-identical. A case that must work (odd paths, odd
line breaks, what `dvc exp run -S` writes) checks its result instead. `python tests/test_bad_input.py`
prints the table of docs/errors.md from what the commands really print.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_local_layouts import tsv, write, write_glue  # noqa: E402

from spanft.errors import MAX_LINE  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = "out"  # most cases' output path, relative to the case directory
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
MARKER = ".spanft-output"


@dataclass
class Case:
    """``setup(dir)`` writes the inputs, ``argv`` runs in ``dir / cwd``; ``expect`` must be in the error line,
    or, for a case that must work (``status`` 0), in what ``check(dir, done)`` reports."""

    kind: str
    id: str
    mistake: str
    setup: Callable[[Path], None]
    argv: list[str]
    expect: str
    status: int = 2
    env: dict = field(default_factory=dict)
    cwd: str = "."
    stdin: bytes | None = None
    stdout: str | None = None  # a file the command's stdout goes to (/dev/full: a full disk)
    check: Callable[[Path, subprocess.CompletedProcess], str] | None = None
    limit_file_size: int | None = None  # bytes: the system refuses writes past it (EFBIG)
    without_root_overrides: bool = False  # root, too, is refused a file it may not read
    signal: int | None = None  # sent to the process group once counting has started
    note: str = ""  # shown after the command in the table
    before_torch: bool = False  # told in a moment: the command runs with a torch and transformers that fail to import


# ---------------------------------------------------------------------------------------------- inputs


def glue_with(change: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        write_glue(root / "glue")
        change(root / "glue")

    return setup


def cola_train(lines: list[str]) -> Callable[[Path], None]:
    return glue_with(lambda glue: write(glue / "CoLA/train.tsv", lines))


def sst2_train(lines: list[str], header: bool = True) -> Callable[[Path], None]:
    return glue_with(lambda glue: write(glue / "SST-2/train.tsv", (["sentence\tlabel"] if header else []) + lines))


def non_utf8_sst2(glue: Path) -> None:
    (glue / "SST-2/train.tsv").write_bytes(b"sentence\tlabel\nfine words\t1\nbad \xff\xfe bytes\t0\n")


def cola_as_sst2(glue: Path) -> None:
    (glue / "SST-2/train.tsv").write_bytes((glue / "CoLA/train.tsv").read_bytes())


def qnli_as_rte(glue: Path) -> None:
    (glue / "RTE/train.tsv").write_bytes((glue / "QNLI/train.tsv").read_bytes())


SNLI_OK = '{"gold_label": "neutral", "sentence1": "A vop sat .", "sentence2": "A vop rested ."}'


def snli_files(train_lines: list[str]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        write(root / "snli/snli_1.0_train.jsonl", train_lines)
        write(root / "snli/snli_1.0_dev.jsonl", [SNLI_OK])
        write(root / "snli/snli_1.0_test.jsonl", [SNLI_OK])

    return setup


def conll_files(train_lines: list[str]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        ok = ["-DOCSTART- -X- -X- O", "", "Zed NNP B-NP B-PER", "ran VBD B-VP O", ""]
        write(root / "conll/train.txt", train_lines)
        write(root / "conll/valid.txt", ok)
        write(root / "conll/test.txt", ok)

    return setup


def files(**contents: str | bytes) -> Callable[[Path], None]:
    """Files by relative path (``__`` in a keyword stands for ``/``); str is written as UTF-8."""
    def setup(root: Path) -> None:
        for name, content in contents.items():
            path = root / name.replace("__", "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode() if isinstance(content, str) else content)

    return setup


def both(*setups: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        for one in setups:
            one(root)

    return setup


class _WrittenOut(yaml.SafeDumper):
    """A change that reuses a block (``tree[a] = tree[b]``) writes it out twice: an alias is a mistake of its own."""

    def ignore_aliases(self, data) -> bool:
        return True


def params_with(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        tree = yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))
        change(tree)
        text = yaml.dump(tree, Dumper=_WrittenOut, sort_keys=False, allow_unicode=True)
        (root / "params.yaml").write_text(text, encoding="utf-8")

    return setup


def params_layout(root: Path) -> None:
    """The folders and corpus file that root/params.yaml names (check-params refuses a missing one)."""
    tree = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    data = root / tree["data"]["dir"]
    for folder in [*tree["tasks"].values(), tree["chunker"]["conll_dir"]]:
        (data / folder).mkdir(parents=True, exist_ok=True)
    corpus = root / tree["corpus"]["local_path"]
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text(" = Zorbs = \n", encoding="utf-8")


def params_text(change: Callable[[str], str]) -> Callable[[Path], None]:
    """params.yaml as text, changed as a person or ``dvc exp run -S`` would change it."""
    def setup(root: Path) -> None:
        (root / "params.yaml").write_text(change((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8")), encoding="utf-8")

    return setup


def set_key(dotted: str, value) -> Callable[[dict], None]:
    def change(tree: dict) -> None:
        *parents, last = dotted.split(".")
        node = tree
        for part in parents:
            node = node[part]
        node[last] = value

    return change


def rename(tree: dict, old: str, new: str) -> None:
    tree[new] = tree.pop(old)


def nothing(root: Path) -> None:
    pass


def prepared_cola(root: Path) -> None:
    from spanft.cli import main

    main(["-q", "prepare-task", "cola", "--source", "synthetic", "--train-size", "16", "--eval-size", "8",
          "--test-size", "8", "--out", str(root / "data/tasks/cola")])


def previous_run(root: Path) -> None:
    """A complete earlier run directory at OUT, as `spanft finetune` leaves it."""
    prepared_cola(root)
    files(**{f"{OUT}__{MARKER}": json.dumps({"made_by": "finetune"}) + "\n",
             f"{OUT}__metrics.json": '{"task": "cola", "metrics": {"validation": {"mcc": 0.25}}}\n',
             f"{OUT}__predictions__validation.tsv": "idx\tgold\tpred\n0\tacceptable\tacceptable\n"})(root)


def big_corpus(root: Path) -> None:
    """About 24 MB of invented words: counting takes seconds and runs in a process pool."""
    import numpy as np

    words = np.array([f"w{i}" for i in range(5000)])
    rng = np.random.default_rng(0)
    with open(root / "corpus.txt", "w", encoding="utf-8") as out:
        for _ in range(40):
            ids = rng.integers(0, len(words), size=(5000, 20))
            out.write("\n".join(" ".join(row) for row in words[ids]) + "\n")


def tiny_model(folder: Path, *, safetensors: bool = True) -> None:
    """A saved BERT of a few hundred weights with its WordPiece tokenizer."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True)
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]) + "\n",
                                      encoding="utf-8")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=7, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                                 intermediate_size=16, max_position_embeddings=32))
    if safetensors:
        model.save_pretrained(folder)
    else:
        model.config.save_pretrained(folder)
        torch.save(model.state_dict(), folder / "pytorch_model.bin")


def backbone_without(*names: str) -> Callable[[Path], None]:
    """A saved backbone at data/backbones/tiny lacking ``names``."""
    def setup(root: Path) -> None:
        tiny_model(root / "data/backbones/tiny")
        for name in names:
            (root / "data/backbones/tiny" / name).unlink()

    return setup


class _Touch:
    """Unpickled, it creates ``path``: what a pickle in a weights file can do."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def pickled_code_model(root: Path) -> None:
    """A model directory whose pytorch_model.bin would create PWNED when unpickled without weights_only."""
    import torch

    tiny_model(root / "evil", safetensors=False)
    state = torch.load(root / "evil" / "pytorch_model.bin")
    state["pooler.dense.bias"] = _Touch(root / "PWNED")
    torch.save(state, root / "evil" / "pytorch_model.bin")


UNREACHABLE_HUB = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"}


def spanbert_files(root: Path) -> None:
    """SpanBERT's layout: a cased vocab.txt, no tokenizer config (so AutoTokenizer lower-cases), a .bin."""
    import torch
    from transformers import BertConfig, BertModel

    folder = root / "spanbert"
    folder.mkdir()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "The", "the", "Cat", "cat", "."]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=len(vocab), hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                                 intermediate_size=16, max_position_embeddings=32))
    model.config.save_pretrained(folder)
    torch.save(model.half().state_dict(), folder / "pytorch_model.bin")


def custom_code_model(root: Path) -> None:
    """A model directory whose config asks for its own modelling code (which would leave a file behind)."""
    tiny_model(root / "custom")
    auto = {"AutoConfig": "modeling.PwnConfig", "AutoModel": "modeling.PwnModel"}
    files(**{"custom__config.json": json.dumps({"model_type": "pwnbert", "auto_map": auto}),
             "custom__modeling.py": "import pathlib\npathlib.Path(__file__).parent.parent.joinpath('PWNED').touch()\n"})(root)


def _bert_dir(folder: Path, words: list[str], rows: int | None = None, lowercase: bool = True,
              positions: int = 32) -> None:
    """A saved BERT with a WordPiece tokenizer of ``words`` and ``rows`` embedding rows (default: one per id)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    folder.mkdir(parents=True)
    BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=lowercase).save_pretrained(folder)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=rows or len(vocab), hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                         intermediate_size=16, max_position_embeddings=positions)).save_pretrained(folder)


def foreign_tokenizer(root: Path) -> None:
    _bert_dir(root / "foreign", ["the", "cat", "sat", "on", "mat", "a", "dog", "ran"], rows=7)


def uncased_kept_cased(root: Path) -> None:
    _bert_dir(root / "uncased", [*"abcdefghijklmnopqrstuvwxyz", "the", "cat"], lowercase=False)


def short_positions(root: Path) -> None:
    prepared_cola(root)
    _bert_dir(root / "data/backbones/tiny", [*"abcdefghijklmnopqrstuvwxyz", "the"], positions=32)


def damaged(name: str, change: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        tiny_model(root / "bb")
        path = root / "bb" / name
        path.write_bytes(change(path.read_bytes()))

    return setup


def read_only(name: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        files(**{"c.txt": "the cat sat\n", name: "complete earlier output\n"})(root)
        (root / name).chmod(0o444)

    return setup


def cache_linked(name: str) -> Callable[[Path], None]:
    """``name`` as DVC checks an output out with cache.type symlink: a link to a read-only cache object."""
    def setup(root: Path) -> None:
        obj = ".dvc/cache/files/md5/9f/" + "0" * 30
        files(**{"c.txt": "the cat sat\n", obj.replace("/", "__"): "committed output\n"})(root)
        (root / obj).chmod(0o444)
        (root / name).symlink_to(root / obj)

    return setup


def readme_twice(root: Path) -> None:
    """A README whose block 'times' has its begin marker pasted twice, the user's text between them."""
    begin, end = (f"<!-- spanft readme: times {m} -->" for m in ("begin", "end"))
    files(**{"README.md": f"# Mine\n{begin}\nmy notes\n{begin}\nold\n{end}\n"})(root)


def with_raw(setup: Callable[[Path], None]) -> Callable[[Path], None]:
    """``setup``, and the local source folders the embedded params name (check-params refuses missing ones)."""
    return both(setup, lambda root: shutil.copytree(ROOT / "data" / "raw", root / "data" / "raw"))


def with_params(setup: Callable[[Path], None]) -> Callable[[Path], None]:
    return both(setup, lambda root: (root / "params.yaml").write_bytes((ROOT / "profiles" / "embedded.yaml").read_bytes()))


CONLL_RUN_TOGETHER = ["-DOCSTART- -X- -X- O", "", "Zed NNP B-NP B-PER", "ran VBD B-VP O", ". . O O",
                      "Kim NNP B-NP B-PER", "sat VBD B-VP O", ". . O O", "Bo NNP B-NP B-PER", "left VBD B-VP O",
                      ". . O O", ""]


# --------------------------------------------------------------------------------------------- commands


def prepare(task: str, task_dir: str, out: str = OUT) -> list[str]:
    return ["prepare-task", task, "--source", "local", "--task-dir", task_dir, "--out", out]


def synthetic_cola(out: str) -> list[str]:
    return ["prepare-task", "cola", "--source", "synthetic", "--train-size", "8", "--eval-size", "4", "--test-size", "4",
            "--out", out]


def finetune(*extra: str, backbone: str = "data/backbones/tiny") -> list[str]:
    return ["finetune", "--task", "cola", "--backbone", backbone, "--data", "data/tasks/cola", "--out", OUT, *extra]


# ------------------------------------------------------------------------------- what a working case shows


def lines_kept(root: Path, done: subprocess.CompletedProcess) -> str:
    out_lines = done.stdout.split("\n")
    assert out_lines.pop() == ""
    assert out_lines == ["the cat | sat", "page | break | tab | bed", "line | separator", "last"], out_lines
    return f"exit 0; 4 input lines, {len(out_lines)} output lines (\\f, \\v, U+2028 separate words, not lines)"


def parquet_written(folder: str) -> Callable[[Path, subprocess.CompletedProcess], str]:
    def check(root: Path, done: subprocess.CompletedProcess) -> str:
        names = sorted(p.name for p in (root / folder).iterdir())
        assert names == [MARKER, "provenance.json", "test.parquet", "train.parquet", "validation.parquet"], names
        return f"exit 0; `{folder}/` holds train, validation, test .parquet and provenance.json"

    return check


def corpus_written(path: str) -> Callable[[Path, subprocess.CompletedProcess], str]:
    def check(root: Path, done: subprocess.CompletedProcess) -> str:
        assert (root / path).read_text(encoding="utf-8") == "Zorb fell from the tree .\n"
        return f"exit 0; `{path}` holds the 1 paragraph"

    return check


def backbone_copied(path: str) -> Callable[[Path, subprocess.CompletedProcess], str]:
    def check(root: Path, done: subprocess.CompletedProcess) -> str:
        weights = ("model.safetensors", "pytorch_model.bin")
        assert any((root / path / name).is_file() for name in weights) and (root / path / MARKER).is_file()
        return f"exit 0; `{path}/` loads as a backbone"

    return check


def link(name: str, target: str) -> Callable[[Path], None]:
    """``name``, a relative symbolic link to ``target`` (which may not exist)."""
    return lambda root: (root / name).symlink_to(target)


def written_through(name: str, target: str, content: str) -> Callable[[Path, subprocess.CompletedProcess], str]:
    def check(root: Path, done: subprocess.CompletedProcess) -> str:
        assert (root / name).is_symlink() and os.readlink(root / name) == target, "the link must stay a link"
        assert (root / target).read_text(encoding="utf-8") == content
        return f"exit 0; written through: `{name}` still links to `{target}`, which holds the output"

    return check


def params_ok(root: Path, done: subprocess.CompletedProcess) -> str:
    from spanft.params.hparams import load_hparams

    assert load_hparams(f"{root / 'params.yaml'}:hparams.cola")["lr"] == 3e-05
    return f"exit 0; `{done.stdout.strip()}`; finetune reads lr 3e-05 as a number"


def null_device(root: Path) -> None:
    """``null``: a character device like /dev/null (made by mknod where allowed: a regression then replaces
    this one, never the system's), else a link to /dev/null; and a corpus."""
    import stat

    files(**{"c.txt": "the cat sat\n" * 20})(root)
    try:
        os.mknod(root / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        (root / "null").symlink_to(os.devnull)


def device_kept(root: Path, done: subprocess.CompletedProcess) -> str:
    import stat

    assert stat.S_ISCHR(os.stat(root / "null").st_mode) and stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert sorted(p.name for p in root.iterdir() if p.name != "hf-home") == ["c.txt", "null"]
    return "exit 0; the counts go through the device, which stays a character device (no file in its place)"


# ----------------------------------------------------------------------------------------------- the cases

ODD_PARAMS_PATHS = {"dir": "../raw données/glue data", "local_path": "corpora/wiki tëxt/wiki.train.tokens"}

CASES = [
    # -- outputs: a command deletes only what it made
    Case("outputs", "out-is-cwd", "`--out .` (the current directory)", files(**{"notes.txt": "mine\n"}),
         synthetic_cola("."), "output . is the current directory"),
    Case("outputs", "out-is-repo-root", "`--out ..` from a sub-folder: the repository root", files(**{"proj__.git__HEAD": "x\n", "proj__sub__notes.txt": "mine\n"}),
         synthetic_cola(".."), "output .. is the repository root", cwd="proj/sub"),
    Case("outputs", "out-user-dir", "`--out` names a directory of the user's", files(**{"results__thesis.tex": "years of work\n"}),
         synthetic_cola("results"), "output results exists and was not written by spanft"),
    Case("outputs", "out-other-command", "`--out` names another command's output", files(**{f"models__tiny__{MARKER}": '{"made_by": "backbone"}\n', "models__tiny__config.json": "{}\n"}),
         synthetic_cola("models/tiny"), "holds the output of `spanft backbone`, not of `spanft prepare-task`"),
    Case("outputs", "out-is-data-dir", "`prepare-task --out` equal to `--task-dir`", glue_with(lambda glue: None),
         prepare("cola", "glue/CoLA", out="glue/CoLA"), "output glue/CoLA is also an input"),
    Case("outputs", "out-inside-data-dir", "`--out` inside `--task-dir`", glue_with(lambda glue: None),
         prepare("cola", "glue/CoLA", out="glue/CoLA/prepared"), "output glue/CoLA/prepared lies inside the input glue/CoLA"),
    Case("outputs", "out-contains-input", "`--out` holding the input", both(prepared_cola, files(**{"dict.tsv": "a b\t5\n"})),
         ["segment-task", "data/tasks/cola", "--method", "ngram", "--dict", "dict.tsv", "--out", "data"],
         "output data contains the input data/tasks/cola"),
    Case("outputs", "out-is-input-file", "`--out` equal to the input file", files(**{"corpus.txt": "a b c\n"}),
         ["count-ngrams", "corpus.txt", "--out", "corpus.txt"], "output corpus.txt is also an input"),
    Case("outputs", "file-out-is-dir", "a file output naming a directory", both(files(**{"counts.tsv": "a b\t5\n", "results__keep.txt": "x\n"})),
         ["build-dict", "counts.tsv", "--size", "1", "--out", "results"], "output results is a directory"),
    Case("outputs", "out-under-a-file", "`--out` below a plain file", files(**{"counts.tsv": "a b\t5\n", "notes.txt": "x\n"}),
         ["build-dict", "counts.tsv", "--size", "1", "--out", "notes.txt/dict.tsv"], "notes.txt is not a directory"),
    Case("outputs", "out-link", "`--out` a link to a file", both(files(**{"counts.tsv": "a b\t5\n", "mine__dict.tsv": "old\n"}), link("link.tsv", "mine/dict.tsv")),
         ["build-dict", "counts.tsv", "--size", "1", "--out", "link.tsv"], "written through", status=0,
         check=written_through("link.tsv", "mine/dict.tsv", "a b\t5\n")),
    Case("outputs", "out-dangling-link", "`--out` a dangling link into an existing folder", both(files(**{"counts.tsv": "a b\t5\n", "mine__keep": ""}), link("link.tsv", "mine/dict.tsv")),
         ["build-dict", "counts.tsv", "--size", "1", "--out", "link.tsv"], "written through", status=0,
         check=written_through("link.tsv", "mine/dict.tsv", "a b\t5\n")),
    Case("outputs", "out-dangling-no-folder", "`--out` a dangling link into a missing folder", both(files(**{"counts.tsv": "a b\t5\n"}), link("link.tsv", "gone/dict.tsv")),
         ["build-dict", "counts.tsv", "--size", "1", "--out", "link.tsv"], "gone/dict.tsv, whose folder does not exist: create"),
    Case("outputs", "profile-link", "`spanft profile` over a params.yaml that links to your file",
         both(files(**{"profiles__embedded.yaml": (ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"), "mine__params.yaml": "old: 1\n"}), link("params.yaml", "mine/params.yaml")),
         ["profile", "embedded", "--root", "."], "written through", status=0,
         check=written_through("params.yaml", "mine/params.yaml", (ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))),
    Case("outputs", "two-outputs-one-file", "the corpus and its tagged sentences sent to one file", nothing,
         ["corpus", "--source", "synthetic", "--tokens", "1000", "--out", "c.txt", "--tagged-out", "./c.txt"],
         "corpus: the tagged-sentences file ./c.txt is the corpus file: give two different files"),
    Case("outputs", "checkpoint-user-dir", "`--checkpoint-dir` naming a directory of the user's", files(**{"models__checkpoint-500__weights.bin": "mine\n"}),
         finetune("--variant", "baseline", "--checkpoint-dir", "models"), "--checkpoint-dir models holds files that spanft finetune did not write", before_torch=True),
    Case("outputs", "rerun-backbone-typo", "rerun with a typo'd backbone (previous run kept)", previous_run,
         finetune("--variant", "baseline", backbone="data/backbones/tny"), "backbone directory data/backbones/tny not found", before_torch=True),
    Case("outputs", "rerun-bad-flag", "rerun with a bad flag (previous run kept)", previous_run,
         finetune("--variant", "baseline", "--dropout", "1.5"), "--dropout: must satisfy 0 <= dropout < 1, found 1.5", before_torch=True),
    Case("outputs", "rerun-missing-data", "rerun with a missing data directory (previous run kept)", previous_run,
         ["finetune", "--task", "cola", "--backbone", "data/backbones/tiny", "--data", "data/tasks/cloa", "--out", OUT,
          "--variant", "baseline"], "--data data/tasks/cloa: task data directory not found", before_torch=True),
    Case("outputs", "dict-size-zero", "dict_size 0 (earlier output kept)", files(**{"counts.tsv": "a b\t5\n", OUT: "complete earlier output\n"}),
         ["build-dict", "counts.tsv", "--size", "0", "--out", OUT], "--size (dict_size) must be > 0, got 0"),
    # -- params cannot run code: ids and paths are checked by their grammar
    Case("params: ids and paths", "hub-id-shell", "a hub id holding shell syntax", params_with(set_key("corpus.hf_id", "x; touch pwned")),
         ["check-params"], "corpus.hf_id: 'x; touch pwned' is not a hub id"),
    Case("params: ids and paths", "backbone-hub-id", "a backbone hub id holding `$(...)`",
         params_with(set_key("backbones.hub", {"tiny2": {"hub_id": "$(touch pwned)"}})),
         ["check-params"], "backbones.hub.tiny2.hub_id: '$(touch pwned)' is not a hub id"),
    Case("params: ids and paths", "revision", "a revision holding a space and `;`",
         params_with(set_key("backbones.hub", {"tiny2": {"hub_id": "bert-base-uncased", "revision": "main; rm -rf ~"}})),
         ["check-params"], "backbones.hub.tiny2.revision: 'main; rm -rf ~' is not a git revision"),
    Case("params: ids and paths", "path-newline", "a path holding a newline", params_with(set_key("data.dir", "data\nraw")),
         ["check-params"], "data.dir: 'data\\nraw' holds the control character '\\n'"),
    Case("params: ids and paths", "backbone-name", "a backbone name that climbs out of data/",
         params_with(lambda tree: tree["backbones"]["build"].update({"../../evil": tree["backbones"]["build"]["tiny"]})),
         ["check-params"], "backbones: '../../evil' is not a name"),
    Case("params: ids and paths", "yaml-python-tag", "a YAML tag that would run code", params_text(lambda text: text + "evil: !!python/object/apply:os.system ['touch pwned']\n"),
         ["check-params"], "could not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system'"),
    Case("params: ids and paths", "yaml-alias", "a task's hparams written as an alias of another's",
         params_text(lambda text: text.replace("  mrpc:\n", "  mrpc: *sst2\n  unused:\n").replace(
             "  sst2:\n", "  sst2: &sst2\n")), ["check-params"],
         "params.yaml:131: *sst2 repeats the values anchored &sst2, which `dvc exp run -S` would leave unchanged there"),
    Case("params: ids and paths", "local-without-path", "data.source local without data.dir",
         params_with(lambda tree: tree["data"].update(source="local", dir="")), ["check-params"],
         "data.source is local but data.dir is empty"),
    # -- params as DVC writes them; ranges and relations
    Case("params: values", "dvc-exp-float", "`lr: 3e-05` as `dvc exp run -S hparams.cola.lr=3e-5` writes it",
         with_raw(params_text(lambda text: text.replace("lr: 7.0e-4", "lr: 3e-05"))), ["check-params"], "lr 3e-05",
         status=0, check=params_ok),
    Case("params: values", "yaml-dialect", "`seed: 010`, 8 in YAML 1.1 and 10 in DVC's YAML 1.2",
         params_text(lambda text: text.replace("  seed: 0                    # synthetic", "  seed: 010                  # synthetic")),
         ["check-params"], "params.yaml:13: corpus.seed: '010' reads as 8 in spanft (YAML 1.1) but 10 in DVC (YAML 1.2"),
    Case("params: values", "duplicate-key", "a key given twice", params_text(lambda text: text + "dict_size: 100\n"),
         ["check-params"], "not valid YAML: duplicate key 'dict_size' (first given at line"),
    Case("params: values", "params-typo", "a typo'd key", params_with(lambda tree: rename(tree, "dict_size", "dict_sise")),
         ["check-params"], "params.yaml: unknown key dict_sise (did you mean dict_size?)"),
    Case("params: values", "lookalike-key", "a key typed with a Cyrillic е (`еpochs`)",
         params_with(lambda tree: tree["hparams"]["cola"].update({"\u0435pochs": 3})), ["check-params"],
         "unknown key hparams.cola.\\u0435pochs (did you mean hparams.cola.epochs?)"),
    Case("params: values", "blank-in-key", "a key quoted with a blank at its end (`'min_count ': 10`)",
         params_text(lambda text: text.replace("  min_count: 10", "  'min_count ': 10")), ["check-params"],
         "unknown key 'ngrams.min_count ' (a blank inside the quotes; did you mean ngrams.min_count?)"),
    Case("params: values", "no-break-space", "a no-break space pasted after a colon (`min_count:\\u00a010`)",
         params_text(lambda text: text.replace("  min_count: 10", "  min_count:\u00a010")), ["check-params"],
         "params.yaml:24: not valid YAML: could not find expected ':'; column 13 holds no-break space (\\xa0)"),
    Case("params: values", "params-dict-size", "dict_size <= 0", params_with(set_key("dict_size", -1)),
         ["check-params"], "params.yaml: dict_size must be a positive number of entries, found -1"),
    Case("params: values", "cluster-executor", "an executor SLURM users mistype", params_with(set_key("cluster.executor", "slrum")),
         ["fanout"], "params.yaml: cluster.executor: 'slrum' is not one of auto, slurm, local"),
    Case("params: values", "fanout-jobs", "`--jobs 0`", params_with(lambda tree: None), ["fanout", "--jobs", "0"],
         "--jobs must be at least 1, found 0"),
    Case("params: values", "fanout-time-limit", "a job time limit shorter than a job's start-up and one checkpoint",
         params_with(lambda tree: None), ["fanout", "--executor", "local", "--time-min", "1"],
         "cluster.time_min 1: 60 s less the signal's lead (0 s, signal_delay_s) and the start-up (~60 s, "
         "cluster.startup_s) leaves 0 s to train"),
    Case("params: values", "dropout", "dropout 1.0", params_with(lambda tree: tree["hparams"].update(cola={**tree["hparams"]["cola"], "dropout": 1.0})),
         ["check-params"], "hparams.cola.dropout: must satisfy 0 <= dropout < 1, found 1.0"),
    Case("params: values", "max-span-len", "max_span_len 0", params_with(lambda tree: tree["hparams"].update(cola={**tree["hparams"]["cola"], "max_span_len": 0})),
         ["check-params"], "hparams.cola.max_span_len: must be at least 1, found 0"),
    Case("params: values", "max-n", "ngrams.max_n above what segmentation matches", params_with(set_key("ngrams.max_n", 7)),
         ["check-params"], "ngrams must satisfy 2 <= min_n <= max_n <= 5"),
    Case("params: values", "min-n", "ngrams.min_n above max_n", params_with(lambda tree: tree["ngrams"].update(min_n=4, max_n=3)),
         ["check-params"], "found min_n 4, max_n 3"),
    Case("params: values", "seed-float", "a seed that is not an integer", params_with(set_key("studies.glue.seeds", [1, 1.5])),
         ["check-params"], "studies.glue.seeds: 1.5 is not an integer"),
    Case("params: values", "seed-twice", "a seed listed twice", params_with(set_key("studies.glue.seeds", [1, 1])),
         ["check-params"], "studies.glue.seeds: 1 is listed twice"),
    Case("params: values", "tokens-zero", "corpus.tokens 0", params_with(set_key("corpus.tokens", 0)),
         ["check-params"], "corpus.tokens must be at least 1, found 0"),
    Case("params: values", "tokens-huge", "corpus.tokens 10^15 (years of counting)", params_with(set_key("corpus.tokens", 10**15)),
         ["check-params"], "corpus.tokens must be at most 10,000,000,000, found 1000000000000000"),
    Case("params: values", "epochs-huge", "epochs 10^9", params_with(lambda tree: tree["hparams"].update(cola={**tree["hparams"]["cola"], "epochs": 10**9})),
         ["check-params"], "hparams.cola.epochs: must be at most 1,000, found 1000000000"),
    Case("params: values", "study-no-tasks", "a study with backbones and no tasks", params_with(set_key("studies.glue.tasks", [])),
         ["check-params"], "studies.glue.tasks is empty but studies.glue.backbones names 'tiny'"),
    Case("params: values", "params-backbone", "a study naming an undefined backbone", params_with(lambda tree: tree["studies"]["ner"].update(backbones=["bert-huge"])),
         ["check-params"], "params.yaml: studies.ner.backbones: 'bert-huge' is not defined under backbones"),
    Case("params: values", "dict-size-too-big", "dict_size larger than the n-grams counted", files(**{"counts.tsv": "a b\t5\nc d\t4\n", OUT: "complete earlier output\n"}),
         ["build-dict", "counts.tsv", "--size", "10", "--out", OUT], "counts.tsv: holds only 2 n-grams, fewer than the 10 asked for"),
    # -- inputs are what they claim to be
    Case("inputs", "headerless-sst2", "an SST-2 file without its header", sst2_train([tsv("good", 1), tsv("bad", 0)], header=False),
         prepare("sst2", "glue/SST-2"), "glue/SST-2/train.tsv:1: expected the official sst2 train header 'sentence\\tlabel'"),
    Case("inputs", "cola-as-sst2", "CoLA's file placed as SST-2's", glue_with(cola_as_sst2),
         prepare("sst2", "glue/SST-2"), "glue/SST-2/train.tsv:1: expected the official sst2 train header"),
    Case("inputs", "qnli-as-rte", "QNLI's file placed as RTE's", glue_with(qnli_as_rte),
         prepare("rte", "glue/RTE"), "glue/RTE/train.tsv:1: expected the official rte train header"),
    Case("inputs", "empty-split", "an empty split (SST-2 dev with only its header)", glue_with(lambda glue: write(glue / "SST-2/dev.tsv", ["sentence\tlabel"])),
         prepare("sst2", "glue/SST-2"), "glue/SST-2/dev.tsv: no sst2 validation examples (an empty split)"),
    Case("inputs", "hub-unreachable", "hub task source, no network, HF_HUB_OFFLINE=0 (a cluster node)", nothing,
         ["describe", "rte", "--source", "hf"], "without network use the official files", env=UNREACHABLE_HUB),
    Case("inputs", "cased-vocab-lowercased", "a cased model whose tokenizer lower-cases (SpanBERT's own files)",
         spanbert_files, ["backbone", "b", "--source", "local", "--path", "spanbert", "--out", OUT],
         "its vocabulary is cased"),
    Case("inputs", "tsv-columns", "GLUE TSV line with a missing column (CoLA)", cola_train([tsv("zq", 1, "", "Fine ."), tsv("zq", 1, "Short .")]),
         prepare("cola", "glue/CoLA"), "glue/CoLA/train.tsv:2: expected 4 tab-separated fields, found 3"),
    Case("inputs", "label-set", "label outside the task's label set (SST-2 label 2)", sst2_train([tsv("good", 1), tsv("odd", 2)]),
         prepare("sst2", "glue/SST-2"), "glue/SST-2/train.tsv:3: label '2' is not one of"),
    Case("inputs", "non-utf8-task", "non-UTF-8 bytes in a task file", glue_with(non_utf8_sst2),
         prepare("sst2", "glue/SST-2"), "glue/SST-2/train.tsv:3: not valid UTF-8"),
    Case("inputs", "snli-null", "SNLI line with a null sentence", snli_files([SNLI_OK, '{"gold_label": "neutral", "sentence1": null, "sentence2": "C d ."}']),
         prepare("snli", "snli"), "snli/snli_1.0_train.jsonl:2: field 'sentence1' must be a string, found null"),
    Case("inputs", "snli-missing", "SNLI line without sentence2", snli_files([SNLI_OK, '{"gold_label": "neutral", "sentence1": "A b ."}']),
         prepare("snli", "snli"), "snli/snli_1.0_train.jsonl:2: missing field 'sentence2'"),
    Case("inputs", "jsonl", "malformed SNLI JSONL line", snli_files([SNLI_OK, '{"gold_label": "neutral", ']),
         prepare("snli", "snli"), "snli/snli_1.0_train.jsonl:2: not valid JSON"),
    Case("inputs", "conll-tag", "CoNLL line with an unknown NER tag", conll_files(["Zed NNP B-NP B-PER", "ran VBD B-VP B-XYZ", ""]),
         prepare("conll2003", "conll"), "conll/train.txt:2: NER tag 'B-XYZ' is not O or [BI]-PER/LOC/ORG/MISC"),
    Case("inputs", "counts-line", "counts file line without a tab", files(**{"counts.tsv": "a b\t5\nc d 4\n", OUT: "complete earlier output\n"}),
         ["build-dict", "counts.tsv", "--size", "2", "--out", OUT], "counts.tsv:2:"),
    Case("inputs", "non-utf8-corpus", "non-UTF-8 bytes in the corpus", files(**{"corpus.txt": b"ok line\n\xff\n"}),
         ["count-ngrams", "corpus.txt", "--out", OUT], "corpus.txt:2: not valid UTF-8"),
    Case("inputs", "missing-file", "missing local file (no CoLA/dev.tsv)", glue_with(lambda glue: (glue / "CoLA/dev.tsv").unlink()),
         prepare("cola", "glue/CoLA"), "CoLA/dev.tsv: cola"),
    Case("inputs", "missing-dir", "missing task folder", nothing, prepare("cola", "no/such/CoLA"),
         "no/such/CoLA: cola folder not found"),
    Case("inputs", "unknown-variant", "unknown variant", prepared_cola, finetune("--variant", "sff"), "unknown variant 'sff'", before_torch=True),
    Case("inputs", "unknown-task", "unknown task", nothing, ["describe", "squad"], "unknown task 'squad'"),
    Case("inputs", "submission-missing-pred", "`submission --pred` naming a file that does not exist", files(**{"predictions__test.tsv": "idx\tgold\tpred\n"}),
         ["submission", "--pred", "CoLA=predictions/tset.tsv", "--out", "sub.zip"],
         "--pred 'CoLA=predictions/tset.tsv': predictions file predictions/tset.tsv not found"),
    Case("inputs", "unknown-profile", "unknown profile", nothing, ["profile", "gpu", "--root", str(ROOT)],
         "unknown profile 'gpu'; available profiles: embedded, paper"),
    Case("inputs", "hub-offline-task", "hub task source without network", nothing,
         ["prepare-task", "cola", "--source", "hf", "--out", OUT], "cannot load nyu-mll/glue", env=OFFLINE),
    Case("inputs", "unknown-backbone", "backbone directory missing", prepared_cola, finetune("--variant", "baseline"),
         "backbone directory data/backbones/tiny not found", before_torch=True),
    Case("inputs", "missing-split", "prepared task data without its train split", both(prepared_cola, lambda root: (root / "data/tasks/cola/train.parquet").unlink()),
         finetune("--variant", "baseline"), "data/tasks/cola/train.parquet: prepared split not found", before_torch=True),
    Case("inputs", "other-task-data", "another task's prepared data", prepared_cola,
         ["finetune", "--task", "mrpc", "--backbone", "data/backbones/tiny", "--data", "data/tasks/cola", "--out", OUT,
          "--variant", "baseline"], "data/tasks/cola/train.parquet: missing column(s) words_b (is this mrpc data?)",
         before_torch=True),
    Case("inputs", "sf-unsegmented", "a span variant on data without spans", prepared_cola, finetune("--variant", "sf"),
         "variant sf needs segmented data (spans_a); data/tasks/cola/train.parquet has none", before_torch=True),
    Case("inputs", "backbone-no-tokenizer", "a backbone directory without tokenizer files", both(prepared_cola, backbone_without("tokenizer.json", "vocab.txt", "tokenizer_config.json")),
         finetune("--variant", "baseline"), "backbone directory data/backbones/tiny has no tokenizer", before_torch=True),
    Case("inputs", "backbone-no-weights", "a backbone directory without weights", both(prepared_cola, backbone_without("model.safetensors")),
         finetune("--variant", "baseline"), "backbone directory data/backbones/tiny has no weights", before_torch=True),
    Case("inputs", "hub-offline-backbone", "hub backbone without network", prepared_cola,
         finetune("--variant", "baseline", backbone="bert-base-uncased"), "backbone 'bert-base-uncased' could not be loaded",
         env=OFFLINE),
    # -- system errors
    Case("system errors", "missing-input", "a missing input file", nothing, ["count-ngrams", "nope.txt", "--out", OUT],
         "nope.txt: corpus file not found"),
    Case("system errors", "dir-not-file", "a directory where a file is expected", files(**{"corpus__part1.txt": "a b\n"}),
         ["count-ngrams", "corpus", "--out", OUT], "corpus: corpus file expected, found a directory"),
    Case("system errors", "data-dir-is-file", "a file where the task folder is expected", files(**{"notes.txt": "x\n"}),
         prepare("cola", "notes.txt"), "notes.txt: expected the cola folder (params data.dir / tasks.cola), found a file"),
    Case("system errors", "permission", "an input the user may not read", files(**{"secret.txt": "a b c\n"}),
         ["count-ngrams", "secret.txt", "--out", OUT], "secret.txt: Permission denied", without_root_overrides=True),
    Case("system errors", "disk-full", "a full disk", files(**{"in.txt": "the cat sat\n" * 2000, "d.tsv": "the cat\t5\n"}),
         ["segment", "--dict", "d.tsv", "in.txt"], "<stdout>: disk full (no space left on device)", stdout="/dev/full",
         note="> /dev/full"),
    Case("system errors", "file-too-large", "a write the system refuses half-way (file size limit)", nothing,
         ["corpus", "--source", "synthetic", "--tokens", "200000", "--out", "corpus.txt"],
         "corpus.txt: File too large: over the file-size limit (ulimit -f) of 65,536 bytes; lift it: "
         "`ulimit -f unlimited` (while writing it)", limit_file_size=65536, note="under `ulimit -f 64`"),
    Case("system errors", "sigterm", "SIGTERM while counting (worker processes running)", big_corpus,
         ["count-ngrams", "corpus.txt", "--out", OUT], "terminated (SIGTERM)", status=143, signal=signal.SIGTERM,
         note="then `kill -TERM`"),
    Case("system errors", "ctrl-c", "Ctrl-C while counting (worker processes running)", big_corpus,
         ["count-ngrams", "corpus.txt", "--out", OUT], "interrupted (Ctrl-C)", status=130, signal=signal.SIGINT,
         note="then Ctrl-C"),
    # -- lines are lines
    Case("lines", "odd-line-breaks", "`segment` on stdin holding \\f, \\v, U+2028 and \\r\\n", files(**{"d.tsv": "the cat\t5\n"}),
         ["segment", "--dict", "d.tsv"], "4 input lines, 4 output lines", status=0, check=lines_kept,
         stdin="the cat sat\npage\x0cbreak tab\x0bbed\r\nline\u2028separator\nlast\n".encode(), note="< odd.txt"),
    # -- any path works
    Case("paths", "odd-data-dir", "task folder and output with spaces and non-ASCII", lambda root: write_glue(root / "my data/glüe"),
         prepare("sst2", "my data/glüe/SST-2", out="out dir/sst2 ü"), "holds train, validation, test", status=0,
         check=parquet_written("out dir/sst2 ü")),
    Case("paths", "odd-corpus-path", "corpus.local_path with spaces and non-ASCII", files(**{"wiki tëxt__wiki.train.tokens": " = Zorbs = \n\n Zorb fell from the tree . \n"}),
         ["corpus", "--source", "local", "--local-path", "wiki tëxt/wiki.train.tokens", "--out", "corpus ö.txt"], "holds the 1 paragraph",
         status=0, check=corpus_written("corpus ö.txt")),
    Case("paths", "odd-backbone-path", "a local backbone path with spaces and non-ASCII", lambda root: tiny_model(root / "models/mödel one"),
         ["backbone", "tiny", "--source", "local", "--path", "models/mödel one", "--out", "bb/tiny ü"], "loads as a backbone",
         status=0, check=backbone_copied("bb/tiny ü")),
    Case("paths", "odd-params-paths", "relative params paths with spaces and non-ASCII",
         both(params_with(lambda tree: (tree["data"].update(dir=ODD_PARAMS_PATHS["dir"]),
                                        tree["corpus"].update(local_path=ODD_PARAMS_PATHS["local_path"]))),
              params_layout),
         ["check-params"], "ok", status=0, check=lambda root, done: f"exit 0; `{done.stdout.strip()}`"),
    # -- loading never runs code
    Case("safe loading", "tensors-only-bin", "a backbone whose only weights are a tensors-only pytorch_model.bin "
         "(SpanBERT's layout)", lambda root: tiny_model(root / "binonly", safetensors=False),
         ["backbone", "b", "--source", "local", "--path", "binonly", "--out", OUT], "loads as a backbone", status=0,
         check=backbone_copied(OUT)),
    Case("safe loading", "pickled-code", "a pytorch_model.bin whose pickle would run code", pickled_code_model,
         ["backbone", "b", "--source", "local", "--path", "evil", "--out", OUT], "holds more than tensors"),
    Case("safe loading", "custom-code", "a backbone that needs its own code (trust_remote_code)", custom_code_model,
         ["backbone", "b", "--source", "local", "--path", "custom", "--out", OUT], "needs its own modelling code"),
    # -- outputs that are not the command's
    Case("outputs", "out-read-only", "`--out` naming a read-only file", read_only(OUT),
         ["count-ngrams", "c.txt", "--out", OUT], "output out is read-only: spanft does not replace it"),
    Case("outputs", "out-cache-link", "`--out` a link into DVC's cache (cache.type symlink)", cache_linked(OUT),
         ["count-ngrams", "c.txt", "--out", OUT], "is a symbolic link into DVC's cache"),
    Case("inputs", "readme-begin-twice", "`spanft readme` with a begin marker pasted twice", readme_twice,
         ["readme"], "README.md: generated block 'times' is not one clear block: 2 begin markers (lines 2, 4)"),
    Case("inputs", "readme-not-utf8", "`spanft readme` on a README that is not UTF-8",
         files(**{"README.md": b"# Sp\xe4n\n"}), ["readme"], "README.md:1: not valid UTF-8 (byte 0xe4"),
    Case("outputs", "report-out-users", "`report --out` naming a folder of the user's",
         with_params(files(**{"notes__index.md": "my notes\n", "notes__todo.txt": "x\n"})),
         ["report", "--out", "notes"], "--out notes: holds files the report did not write"),
    Case("outputs", "out-dev-null", "`--out` a character device (what /dev/null is), also as root", null_device,
         ["count-ngrams", "c.txt", "--min-count", "1", "--out", "null"], "stays a character device", status=0,
         check=device_kept, note="(`null`: made by `mknod null c 1 3`)"),
    # -- params: plausible values
    Case("params: values", "lr-typo", "a learning rate of 2e5 (for 2e-5)",
         params_with(lambda tree: tree["hparams"].__setitem__("cola", {**tree["hparams"]["cola"], "lr": 2e5})),
         ["check-params"], "hparams.cola.lr: must satisfy 0 < lr <= 1"),
    Case("params: values", "data-revision", "a data revision outside git's ref grammar",
         params_with(set_key("data.revisions", {"cola": "main..dev"})), ["check-params"],
         "data.revisions.cola: 'main..dev' is not a git revision"),
    Case("params: values", "report-task", "a typo'd task in reports.mcnemar_tasks",
         params_with(set_key("reports.mcnemar_tasks", ["cola", "sst"])), ["check-params"],
         "reports.mcnemar_tasks: unknown task 'sst' (did you mean sst2?)"),
    Case("params: values", "empty-seeds", "a study with backbones and no seeds",
         params_with(set_key("studies.glue.seeds", [])), ["check-params"], "studies.glue.seeds is empty"),
    Case("params: values", "backbone-dot", "a backbone name holding a dot (DVC would split it)",
         params_with(lambda tree: tree["backbones"]["build"].__setitem__("tiny.v2", tree["backbones"]["build"]["tiny"])),
         ["check-params"], "'tiny.v2' is not a name"),
    Case("params: values", "max-seq-len", "max_seq_len above a built backbone's max_len",
         params_with(lambda tree: tree["hparams"].__setitem__("cola", {**tree["hparams"]["cola"], "max_seq_len": 512})),
         ["check-params"], "hparams.cola.max_seq_len 512 exceeds backbones.build.tiny.max_len 256"),
    Case("params: values", "max-n-flag", "`--max-n` beyond the bounds of ngrams.max_n",
         files(**{"c.txt": "the cat sat\n"}), ["count-ngrams", "c.txt", "--max-n", "7", "--out", OUT],
         "--min-n/--max-n (ngrams.min_n/max_n) must satisfy 2 <= min_n <= max_n <= 5"),
    # -- models against their settings
    Case("models", "foreign-tokenizer", "a tokenizer with more ids than the embedding has rows", foreign_tokenizer,
         ["backbone", "b", "--source", "local", "--path", "foreign", "--out", OUT],
         "its tokenizer has 13 ids but its embedding has 7 rows"),
    Case("models", "uncased-kept-cased", "an uncased vocabulary behind a tokenizer that keeps case", uncased_kept_cased,
         ["backbone", "b", "--source", "local", "--path", "uncased", "--out", OUT], "its vocabulary is uncased"),
    Case("models", "max-seq-len-positions", "--max-seq-len above the backbone's position embeddings", short_positions,
         finetune("--variant", "baseline", "--max-seq-len", "64"), "max_seq_len 64 exceeds its 32 position embeddings"),
    # -- readers name the file and the line
    Case("readers", "conll-no-blank-lines", "CoNLL sentences without blank lines between them",
         conll_files(CONLL_RUN_TOGETHER), prepare("conll2003", "conll"),
         "conll/train.txt:3: a sentence of 9 tokens runs through 2 sentence ends"),
    Case("readers", "conll-first-line-columns", "CoNLL whose first line has the wrong column count",
         conll_files(["Zed NNP B-PER", "ran VBD B-VP O", "away RB B-ADVP O", ""]), prepare("conll2003", "conll"),
         "conll/train.txt:1: expected 4 columns"),
    Case("readers", "truncated-safetensors", "a truncated model.safetensors",
         damaged("model.safetensors", lambda data: data[:len(data) // 2]),
         ["backbone", "b", "--source", "local", "--path", "bb", "--out", OUT], "bb/model.safetensors: truncated"),
    Case("readers", "broken-tokenizer-json", "a broken tokenizer.json",
         damaged("tokenizer.json", lambda data: data[:len(data) // 2]),
         ["backbone", "b", "--source", "local", "--path", "bb", "--out", OUT], "bb/tokenizer.json:"),
    # -- one readable line
    Case("lines", "invisible-key", "a key holding a zero-width space and an ESC sequence",
         params_with(lambda tree: tree.__setitem__("dict\u200b_size\x1b[2J", 1)), ["check-params"],
         "dict\\u200b_size\\x1b[2J"),
    Case("lines", "huge-value", "a 2 MB value", params_with(set_key("corpus.hf_id", "a" * 2_000_000)),
         ["check-params"], "characters left out"),
]


# ------------------------------------------------------------------------------------------------ harness


def snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (the hub cache aside): path -> content digest."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if relative.startswith("hf-home"):
            continue
        found[relative] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return found


def _drop_root_overrides() -> None:
    """In the child: give up CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so root meets file permissions too."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _preexec(case: Case) -> Callable[[], None] | None:
    if case.limit_file_size is None and not case.without_root_overrides:
        return None

    def run() -> None:
        if case.limit_file_size is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # then the write fails with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (case.limit_file_size, case.limit_file_size))
        if case.without_root_overrides and os.geteuid() == 0:
            _drop_root_overrides()

    return run


def prepare_case(case: Case, workdir: Path) -> dict[str, str]:
    case.setup(workdir)
    if case.without_root_overrides:
        (workdir / "secret.txt").chmod(0)
    return snapshot(workdir)


def run_case(case: Case, workdir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, **case.env, "HF_HOME": str(workdir / "hf-home"), "PYTHONUNBUFFERED": "1"}
    env.pop("DVC_ROOT", None)
    if case.before_torch:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_failing_imports(workdir)), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-m", "spanft.cli", *case.argv]
    cwd = workdir / case.cwd
    if case.signal is not None:
        return _run_and_signal(argv, cwd, env, case.signal)
    stdout = open(case.stdout, "wb") if case.stdout else subprocess.PIPE
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, input=case.stdin if case.stdin is not None else b"",
                              stdout=stdout, stderr=subprocess.PIPE, timeout=300, preexec_fn=_preexec(case))
    finally:
        if case.stdout:
            stdout.close()
    return subprocess.CompletedProcess(argv, done.returncode, (done.stdout or b"").decode("utf-8", "replace"),
                                       done.stderr.decode("utf-8", "replace"))


def _failing_imports(workdir: Path) -> Path:
    """A folder of stand-ins for torch and transformers that fail on import, to put first on the path (beside
    the case's folder: nothing may appear in that)."""
    folder = workdir.parent / f"{workdir.name}-failing-imports"
    for name in ("torch", "transformers"):
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "__init__.py").write_text(f"raise ImportError('{name} imported before the mistake was told')\n")
    return folder


def _run_and_signal(argv: list[str], cwd: Path, env: dict, signum: int) -> subprocess.CompletedProcess:
    """Start the command in its own process group; once counting runs, signal the whole group (as a terminal
    does on Ctrl-C, and as `kill` on a group does)."""
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    seen = b""
    deadline = time.monotonic() + 120
    while b"encode" not in seen and time.monotonic() < deadline and process.poll() is None:
        ready, _, _ = select.select([process.stderr], [], [], 1.0)
        if ready:
            seen += os.read(process.stderr.fileno(), 4096)
    time.sleep(0.05)  # the pool counts now: after "encoded" it has ~0.4 s of work on a quiet 2-core machine
    assert process.poll() is None, "the command ended before it could be interrupted"
    os.killpg(process.pid, signum)
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(argv, process.returncode, out.decode(), (seen + err).decode("utf-8", "replace"))


def error_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.replace("\r", "\n").splitlines() if line.startswith("spanft: error:")]


def _needs(case: Case) -> None:
    if case.stdout and not os.path.exists(case.stdout):
        pytest.skip(f"{case.stdout} does not exist here")
    if case.without_root_overrides and os.geteuid() == 0:
        try:
            subprocess.run(["true"], preexec_fn=_drop_root_overrides, check=True)
        except (OSError, subprocess.SubprocessError):
            pytest.skip("running as root without the right to drop root's permission overrides")


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_each_mistake_gives_one_line_and_changes_nothing(case: Case, tmp_path: Path):
    _needs(case)
    before = prepare_case(case, tmp_path)
    done = run_case(case, tmp_path)
    assert done.returncode == case.status, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    if case.status == 0:
        assert case.expect in case.check(tmp_path, done)
        return
    errors = error_lines(done)
    assert len(errors) == 1, done.stderr
    assert case.expect in errors[0], errors[0]
    assert len(errors[0]) <= MAX_LINE, "a line a person can read (head and tail kept)"
    assert snapshot(tmp_path) == before, "nothing may be written, removed or left behind"


@pytest.mark.parametrize("closed", [(2,), (0, 1, 2)], ids=["stderr", "all three"])
def test_a_command_started_with_closed_standard_streams_still_works(tmp_path: Path, closed: tuple[int, ...]):
    """`2>&-`: the first file a command opens would take the closed descriptor, and the progress bar or the error
    line would go into it, or fail; the output must be what it is with the streams open, and a mistake still exits 2."""
    (tmp_path / "corpus.txt").write_text("the cat sat on the mat\nthe cat sat\n" * 50, encoding="utf-8")

    def run(out: str, corpus: str = "corpus.txt", close: tuple[int, ...] = closed) -> int:
        argv = [sys.executable, "-m", "spanft.cli", "count-ngrams", corpus, "--out", out, "--min-count", "2"]
        return subprocess.run(argv, cwd=tmp_path, timeout=120, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              preexec_fn=lambda: [os.close(fd) for fd in close]).returncode

    assert run("open.tsv", close=()) == 0
    assert run("closed.tsv") == 0
    assert (tmp_path / "closed.tsv").read_bytes() == (tmp_path / "open.tsv").read_bytes()
    assert run("missing.tsv", corpus="nope.txt") == 2
    assert sorted(path.name for path in tmp_path.iterdir()) == ["closed.tsv", "corpus.txt", "open.tsv"]


@pytest.mark.parametrize("stdout", ["closed", "read-only"])
def test_a_result_for_stdout_that_cannot_go_there_is_an_error_not_lost(tmp_path: Path, stdout: str):
    """`spanft segment` delivers its result on stdout: with stdout closed (`>&-`) or open read-only it must fail
    with one line and exit 2, as `echo hi >&-` fails, never exit 0 with the result gone."""
    (tmp_path / "in.txt").write_text("the cat sat on the mat\n", encoding="utf-8")
    (tmp_path / "d.tsv").write_text("the cat\t5\n", encoding="utf-8")
    argv = [sys.executable, "-m", "spanft.cli", "segment", "--dict", "d.tsv", "in.txt"]
    with open(tmp_path / "in.txt", "rb") as read_only:
        done = subprocess.run(argv, cwd=tmp_path, timeout=120, stderr=subprocess.PIPE, text=True,
                              stdout=read_only if stdout == "read-only" else None,
                              preexec_fn=(lambda: os.close(1)) if stdout == "closed" else None)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "spanft: error: <stdout>: Bad file descriptor (while writing the spans)\n"
    assert (tmp_path / "in.txt").read_text(encoding="utf-8") == "the cat sat on the mat\n"


def test_the_command_line_module_loads_nothing_before_main():
    """What the `spanft` entry point imports before main() runs is outside main's Ctrl-C handling: it must be
    the package's error handling only, not the subcommands and their libraries."""
    code = ("import sys, spanft.cli; print(' '.join(sorted(m for m in sys.modules if m.startswith('spanft') "
            "or m.split('.')[0] in ('numpy', 'torch', 'pandas', 'yaml'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["spanft", "spanft.cli", "spanft.errors"], done.stdout


def test_ctrl_c_on_mains_first_import_is_one_line(tmp_path: Path):
    """Ctrl-C landing on the first import main() makes (checking the standard streams, then loading the
    subcommands) ends as one line and exit 130."""
    code = ("import builtins, sys\n"
            "from spanft.cli import main\n"
            "load = builtins.__import__\n"
            "def interrupted(name, *args, **kwargs):\n"
            "    if name not in sys.modules:\n"
            "        builtins.__import__ = load\n"
            "        raise KeyboardInterrupt\n"
            "    return load(name, *args, **kwargs)\n"
            "builtins.__import__ = interrupted\n"
            "sys.exit(main(['count-ngrams', 'c.txt', '--out', 'out.tsv']))\n")
    (tmp_path / "c.txt").write_text("the cat sat\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, "spanft: error: interrupted (Ctrl-C)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]


@pytest.mark.parametrize("name, status, line", [("SIGINT", 130, "interrupted (Ctrl-C)"), ("SIGTERM", 143, "terminated (SIGTERM)")])
def test_a_stop_that_a_finalizer_swallows_still_stops_the_command(name: str, status: int, line: str):
    """Python prints and drops an exception raised inside ``__del__``: Ctrl-C or SIGTERM arriving while a library's
    finalizer runs would let the command finish with exit 0. It must be said at once (no traceback) and the
    command still end as stopped."""
    code = ("import signal, sys\n"
            "from spanft.errors import run_command\n"
            "class Finalized:\n"
            f"    def __del__(self): signal.raise_signal(signal.{name})\n"
            "def body():\n"
            "    Finalized()\n"
            "    print('went on')\n"
            "sys.exit(run_command(body))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    said = done.stderr.splitlines()
    assert done.returncode == status and said[-1] == f"spanft: error: {line}", done.stderr
    assert len(said) == 2 and said[0].startswith(f"spanft: {line.split()[-1].strip('()')} landed in a library's "
                                                 f"clean-up code, which drops it: send it again"), done.stderr
    assert done.stdout == "went on\n"


def test_a_command_started_with_ctrl_c_ignored_keeps_ignoring_it():
    """`nohup` and `cmd &` in a script start a command with SIGINT ignored: spanft's handling must not take it back."""
    code = ("import signal, sys\n"
            "from spanft.errors import run_command\n"
            "sys.exit(run_command(lambda: signal.raise_signal(signal.SIGINT) or print('went on')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert (done.returncode, done.stdout, done.stderr) == (0, "went on\n", "")


def test_help_to_a_closed_stdout_is_one_line():
    done = subprocess.run([sys.executable, "-m", "spanft.cli", "--help"], capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: os.close(1))
    assert (done.returncode, done.stderr) == (2, "spanft: error: <stdout>: Bad file descriptor\n")


def test_every_class_of_the_issue_has_rows():
    kinds = {case.kind for case in CASES}
    assert kinds == {"outputs", "params: ids and paths", "params: values", "inputs", "system errors", "lines",
                     "paths", "safe loading", "models", "readers"}
    assert len({case.id for case in CASES}) == len(CASES)


def test_docs_errors_table_has_a_row_for_each_case_in_order():
    """docs/errors.md's table is regenerated by `python tests/test_bad_input.py` (minutes): a case added, removed
    or renamed without it fails here, at once."""
    lines = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| class | mistake | command | exit | what you see |") + 2
    rows = [line.split(" | ")[:2] for line in lines[start:] if line.startswith("| ")]
    rows = rows[:next((i for i, line in enumerate(lines[start:]) if not line.startswith("|")), len(rows))]
    assert rows == [[f"| {case.kind}", case.mistake] for case in CASES], "regenerate: python tests/test_bad_input.py"


def markdown_table() -> str:
    """docs/errors.md's table, from what each command really prints."""
    import tempfile

    rows = ["| class | mistake | command | exit | what you see |", "|---|---|---|---|---|"]
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            prepare_case(case, Path(tmp))
            done = run_case(case, Path(tmp))
            seen = case.check(Path(tmp), done) if case.status == 0 else error_lines(done)[0]
            seen = seen.replace(os.path.realpath(tmp), "<dir>").replace(str(ROOT), "<repo>")
        if len(seen) > 150:
            seen = seen[:147] + "..."
        command = " ".join(f"'{a}'" if " " in a or not a else a for a in case.argv).replace(str(ROOT), ".")
        note = f" {case.note}" if case.note else ""
        rows.append(f"| {case.kind} | {case.mistake} | `spanft {command}`{note} | {done.returncode} | "
                    f"`{seen.replace('|', chr(92) + '|')}` |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())

