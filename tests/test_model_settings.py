"""Issue 32, class 4: a backbone is checked against its settings before training starts, in one line.

Generated cases: tokenizers with more ids than the embedding has rows, ``max_seq_len`` against the position
embeddings (BERT, RoBERTa's offset, a built backbone's ``max_len``), and case in both directions.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanft.errors import SpanftError

torch = pytest.importorskip("torch")
from transformers import (  # noqa: E402
    BertConfig,
    BertModel,
    BertTokenizerFast,
    RobertaConfig,
    RobertaModel,
)

from spanft.model import loading  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def _bert(rows: int, positions: int = 32) -> BertModel:
    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=rows, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                                intermediate_size=16, max_position_embeddings=positions))


def _tokenizer(tmp_path, words: list[str], lowercase: bool) -> BertTokenizerFast:
    return BertTokenizerFast(vocab={w: i for i, w in enumerate(SPECIALS + words)}, do_lower_case=lowercase)


_word = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)


@SETTINGS
@given(words=st.lists(_word, min_size=1, max_size=30, unique=True), rows=st.integers(1, 40))
def test_a_tokenizer_with_more_ids_than_embedding_rows_is_one_line(tmp_path_factory, words, rows):
    tokenizer = _tokenizer(tmp_path_factory.mktemp("v"), words, lowercase=True)
    ids = len(SPECIALS) + len(words)
    model = _bert(rows)
    if ids <= rows:
        loading.check_vocabulary(model, tokenizer, "bb")
        return
    with pytest.raises(SpanftError) as caught:
        loading.check_vocabulary(model, tokenizer, "bb")
    message = str(caught.value)
    assert "backbone bb" in message and f"{ids} ids" in message and f"{rows} rows" in message
    assert "\n" not in message


@SETTINGS
@given(positions=st.integers(4, 64), max_seq_len=st.integers(1, 96), roberta=st.booleans())
def test_max_seq_len_beyond_the_position_embeddings_is_one_line(positions, max_seq_len, roberta):
    if roberta:
        config = RobertaConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                               intermediate_size=16, max_position_embeddings=positions, pad_token_id=1)
        model, usable = RobertaModel(config), positions - 2
    else:
        model, usable = _bert(20, positions), positions
    if max_seq_len <= usable:
        loading.check_max_seq_len(model, "bb", max_seq_len)
        ids = torch.full((1, max_seq_len), 5, dtype=torch.long)
        model(input_ids=ids)  # it really fits
        return
    with pytest.raises(SpanftError) as caught:
        loading.check_max_seq_len(model, "bb", max_seq_len)
    assert f"max_seq_len {max_seq_len} exceeds its {usable} position embeddings" in str(caught.value)
    with pytest.raises((IndexError, RuntimeError)):  # what the run would have met mid-training
        model(input_ids=torch.full((1, max_seq_len), 5, dtype=torch.long))


_cased_word = st.text(alphabet=string.ascii_letters, min_size=1, max_size=6)


@SETTINGS
@given(words=st.lists(_word, min_size=1, max_size=30, unique=True))
def test_an_uncased_vocabulary_behind_a_case_keeping_tokenizer_is_refused(tmp_path_factory, words):
    words = sorted(set(words) | set(string.ascii_lowercase))  # single letters, as every WordPiece vocabulary has
    kept = _tokenizer(tmp_path_factory.mktemp("v"), words, lowercase=False)
    with pytest.raises(SpanftError) as caught:
        loading.check_case(kept, "bb")
    assert "backbone bb: its vocabulary is uncased" in str(caught.value) and "[UNK]" in str(caught.value)
    folded = _tokenizer(tmp_path_factory.mktemp("v"), words, lowercase=True)
    loading.check_case(folded, "bb")  # the same vocabulary, lower-cased: fine


@SETTINGS
@given(words=st.lists(_cased_word, min_size=1, max_size=30, unique=True))
def test_a_cased_vocabulary_that_keeps_case_passes(tmp_path_factory, words):
    words = sorted(set(words) | set(string.ascii_letters))
    loading.check_case(_tokenizer(tmp_path_factory.mktemp("v"), words, lowercase=False), "bb")


def _saved(folder, words, rows, lowercase=True, positions=32):
    folder.mkdir(parents=True)
    _tokenizer(folder, words, lowercase).save_pretrained(folder)
    _bert(rows, positions).save_pretrained(folder)
    return folder


def test_load_backbone_refuses_a_foreign_tokenizer_before_training(tmp_path):
    folder = _saved(tmp_path / "bb", ["the", "cat", "sat", "on", "mat"], rows=7)
    with pytest.raises(SpanftError, match="its tokenizer has 10 ids but its embedding has 7 rows"):
        loading.load_backbone(str(folder))


def test_load_backbone_refuses_an_uncased_vocabulary_kept_cased(tmp_path):
    folder = _saved(tmp_path / "bb", sorted(set(string.ascii_lowercase) | {"the"}), rows=40, lowercase=False)
    with pytest.raises(SpanftError, match="vocabulary is uncased"):
        loading.load_backbone(str(folder))
