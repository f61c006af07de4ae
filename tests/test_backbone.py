"""The tiny local backbone: built from a corpus, loadable offline with AutoModel/AutoTokenizer, deterministic."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from spanft.backbone import BackboneConfig, backbone_is_uncased, load_backbone, make_backbone, mlm_blocks
from spanft.cli import main
from spanft.errors import SpanftError

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
    argv = ["make-backbone", "--corpus", str(corpus), "--out", str(out), "--vocab-size", "300", "--hidden", "32",
            "--layers", "1", "--heads", "2", "--intermediate", "64", "--max-len", "64", "--mlm-steps", "0"]
    assert main(argv) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"backbone: {out}:") and "0 MLM steps" in line
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
    assert main(["make-backbone", "--corpus", str(corpus), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spanft: error:") and message in err and "\n" not in err
    assert not out.exists()


def test_missing_or_undecodable_corpus_is_one_line_and_leaves_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["make-backbone", "--corpus", str(tmp_path / "none.txt"), "--out", str(out)]) == 2
    assert "none.txt" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine line\nbroken \xff line\n")
    assert main(["make-backbone", "--corpus", str(bad), "--out", str(out), "--mlm-steps", "0"]) == 2
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
