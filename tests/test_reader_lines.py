"""Issue 32, class 5: readers tell what is wrong with the file, on the right line.

Generated CoNLL files: sentences run together without blank lines are refused (not read as one document-long
sentence); a line with the wrong column count is named, whichever line it is (the first included). Generated
damage to a backbone's files (truncated or garbled weights, tokenizer and config) is named with the file and
what is wrong, never as "code in a pickle" and never as a traceback.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanft.data.local_readers import conll_sentences
from spanft.errors import SpanftError

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=8)
_sentence = st.lists(_word, min_size=1, max_size=12).map(lambda words: [*words, "."])


def _lines(sentences: list[list[str]], blank: bool, columns: int = 4) -> list[str]:
    lines = ["-DOCSTART- -X- -X- O", ""]
    for sentence in sentences:
        lines += [" ".join([token, "NN", "B-NP", "O"][:columns - 1] + ["O"]) if columns > 1 else token
                  for token in sentence]
        if blank:
            lines.append("")
    return lines


def _write(tmp: Path, lines: list[str]) -> Path:
    path = tmp / "train.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@SETTINGS
@given(sentences=st.lists(_sentence, min_size=3, max_size=8), columns=st.sampled_from([2, 3, 4]))
def test_sentences_without_blank_lines_are_refused_not_merged(tmp_path_factory, sentences, columns):
    tmp = tmp_path_factory.mktemp("c")
    read = list(conll_sentences(_write(tmp, _lines(sentences, blank=True, columns=columns))))
    assert [tokens for _, tokens, _, _ in read] == sentences  # with blank lines: each sentence on its own
    with pytest.raises(SpanftError) as caught:
        list(conll_sentences(_write(tmp, _lines(sentences, blank=False, columns=columns))))
    message = str(caught.value)
    assert message.startswith(f"{tmp / 'train.txt'}:3: a sentence of {sum(map(len, sentences))} tokens")
    assert "a blank line must end each sentence" in message and "\n" not in message


@SETTINGS
@given(sentences=st.lists(_sentence, min_size=2, max_size=6), data=st.data())
def test_a_column_count_error_names_the_wrong_line(tmp_path_factory, sentences, data):
    lines = _lines(sentences, blank=True)
    token_lines = [i for i, line in enumerate(lines) if line and not line.startswith("-DOCSTART-")]
    wrong = data.draw(st.sampled_from(token_lines))
    fields = lines[wrong].split()
    lines[wrong] = " ".join(data.draw(st.sampled_from([fields[:3], fields + ["extra"], [fields[0], fields[-1]]])))
    path = _write(tmp_path_factory.mktemp("c"), lines)
    with pytest.raises(SpanftError) as caught:
        list(conll_sentences(path))
    assert str(caught.value).startswith(f"{path}:{wrong + 1}: expected 4 columns"), (wrong + 1, str(caught.value))


# -- a backbone's damaged files

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    from test_bad_input import tiny_model

    root = tmp_path_factory.mktemp("models")
    tiny_model(root / "safetensors")
    tiny_model(root / "bin", safetensors=False)
    return {"model.safetensors": root / "safetensors", "pytorch_model.bin": root / "bin",
            "tokenizer.json": root / "safetensors", "config.json": root / "safetensors"}


_DAMAGE = {
    "truncate": lambda data, frac: data[:max(0, int(len(data) * frac))],
    "garble": lambda data, frac: bytes(b ^ 0x5A for b in data[:64]) + data[64:],
    "empty": lambda data, frac: b"",
}


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(sorted(["model.safetensors", "pytorch_model.bin", "tokenizer.json", "config.json"])),
       damage=st.sampled_from(sorted(_DAMAGE)), frac=st.floats(0.05, 0.95))
def test_a_damaged_model_file_is_named_with_what_is_wrong(models, tmp_path_factory, name, damage, frac):
    from spanft.model.loading import load_backbone

    folder = tmp_path_factory.mktemp("m") / "bb"
    shutil.copytree(models[name], folder)
    path = folder / name
    path.write_bytes(_DAMAGE[damage](path.read_bytes(), frac))
    with pytest.raises(SpanftError) as caught:
        load_backbone(str(folder))
    message = str(caught.value)
    assert message.startswith(str(path)), message  # the file, not just the directory
    assert "holds more than tensors" not in message and "\n" not in message
    assert any(word in message for word in ("truncated", "not valid JSON", "empty", "not a", "damaged")), message
