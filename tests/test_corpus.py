"""Tests of the corpus stage: the synthetic language, its writers, WikiText from a file or (faked) hub."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

import spanft.data.provenance as provenance
from spanft.cli import main
from spanft.data import corpus
from spanft.data.corpus import write_synthetic_corpus, write_tagged_sentences
from spanft.data.synthetic.language import SyntheticLanguage, Token, language_for_seed
from spanft.errors import SpanftError
from spanft.report.build import summary_lines

# The Penn Treebank tag set, written out here independently of the module under test.
PTB = set(
    "CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH "
    "VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB , . : `` '' -LRB- -RRB- $ #".split()
)
NER = {"O"} | {f"{p}-{k}" for p in "BI" for k in ("PER", "LOC", "ORG", "MISC")}


@pytest.fixture(scope="module")
def language():
    return language_for_seed(0)


@pytest.fixture(scope="module")
def sentences(language) -> list[list[Token]]:
    rng = np.random.default_rng(123)
    return [language.sentence(rng) for _ in range(3000)]


@pytest.fixture(scope="module")
def corpus_1m(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "train.txt"
    write_synthetic_corpus(path, 1_000_000, seed=0)
    return path


def entity_spans(sentence: list[Token]) -> list[tuple[tuple[str, ...], str]]:
    """Entities of one sentence from its IOB2 tags (a plain loop)."""
    spans, current, kind = [], [], None
    for token in sentence + [Token("", "", "O")]:
        if token.ner.startswith("I-") and kind == token.ner[2:]:
            current.append(token.word)
            continue
        if current:
            spans.append((tuple(current), kind))
        current, kind = ([token.word], token.ner[2:]) if token.ner.startswith("B-") else ([], None)
    return spans


# -- the language ----------------------------------------------------------------------------------


def test_same_seed_same_language_and_sentences():
    a, b = SyntheticLanguage(7), SyntheticLanguage(7)
    assert a.mwes == b.mwes and a.words_by_tag == b.words_by_tag
    ra, rb = np.random.default_rng(1), np.random.default_rng(1)
    assert [a.sentence(ra) for _ in range(50)] == [b.sentence(rb) for _ in range(50)]
    assert SyntheticLanguage(8).words_by_tag["NN"][:50] != a.words_by_tag["NN"][:50]


def test_tags_are_ptb_and_iob2(sentences):
    for sentence in sentences:
        assert all(isinstance(t, Token) and t.word and " " not in t.word for t in sentence)
        assert {t.pos for t in sentence} <= PTB
        assert {t.ner for t in sentence} <= NER
        for previous, token in zip([Token("", "", "O")] + sentence, sentence):
            if token.ner.startswith("I-"):
                assert previous.ner[2:] == token.ner[2:], sentence


def test_surface_form_is_english_like(sentences):
    used_tags = Counter(t.pos for s in sentences for t in s)
    for tag in ("DT", "JJ", "NN", "NNS", "NNP", "VB", "VBD", "VBZ", "VBP", "VBN", "VBG", "IN", "CC", "PRP", "PRP$",
                "RB", "MD", "CD", "TO", ",", "."):
        assert used_tags[tag] > 0, tag
    for sentence in sentences:
        assert not sentence[0].word[0].islower()  # capitalised (or a number)
        assert sentence[-1].pos == "." and sentence[-1].word in {".", "?"}
        assert any(t.pos.startswith("VB") or t.pos == "MD" for t in sentence)
        for token, following in zip(sentence, sentence[1:]):
            if (token.ner != "O" or token.pos == "NNP") and token.word != "of":
                assert token.word[0].isupper()
            if token.pos == "DT" and token.word.lower() not in {"that"}:
                assert following.pos in {"JJ", "NN", "NNS"}, sentence
            if token.word.lower() == "a":
                assert following.word[0].lower() not in "aeiou"
            if token.word.lower() == "an":
                assert following.word[0].lower() in "aeiou"
            # Subject-verb agreement after a pronoun subject.
            pair = (token.word.lower(), following.word)
            assert not (pair[0] in {"they", "we"} and pair[1] in {"was", "is", "has"}), sentence
            assert not (pair[0] in {"he", "she"} and pair[1] in {"were", "are", "have"}), sentence
        # Questions start with a modal, statements do not end with "?".
        assert (sentence[-1].word == "?") == (sentence[0].pos == "MD")


def test_words_by_tag_lists_every_generated_word_most_frequent_first(language):
    observed: dict[str, Counter] = defaultdict(Counter)
    for sentence in language.sentences(np.random.default_rng(5), 30_000):
        for token in sentence[1:]:  # the first word is capitalised
            observed[token.pos][token.word] += 1
    for tag, counts in observed.items():
        assert set(counts) <= set(language.words_by_tag[tag]), tag
    for tag in ("DT", "IN", "NN", "JJ", "VBD", "NNS"):
        listed = language.words_by_tag[tag]
        assert observed[tag][listed[0]] >= 0.9 * observed[tag].most_common(1)[0][1], tag
        top = listed[:20]
        rho = spearmanr(np.arange(len(top)), [observed[tag][w] for w in top]).statistic
        assert rho < -0.6, (tag, rho)
    for tag, words in language.words_by_tag.items():
        assert tag in PTB and len(words) == len(set(words)) > 0


def test_mwes_are_well_formed_and_tagged_as_planted(language, sentences):
    kinds = Counter(kind for _, kind in language.mwes)
    assert set(kinds) == {"PER", "LOC", "ORG", "MISC", "collocation", "idiom"}
    assert all(len(words) >= 2 for words, _ in language.mwes)
    assert len({words for words, _ in language.mwes}) == len(language.mwes)
    planted = {words: kind for words, kind in language.mwes}
    multiword_entities = [span for s in sentences for span in entity_spans(s) if len(span[0]) > 1]
    assert len(multiword_entities) > 300
    for words, kind in multiword_entities:
        assert planted.get(words) == kind
    for words, kind in language.mwes:
        if kind in ("PER", "LOC", "ORG", "MISC"):
            assert all(w[0].isupper() for w in words if w != "of")


def test_planted_mwes_recur_with_zipfian_frequencies(language, corpus_1m):
    text = " " + corpus_1m.read_text(encoding="utf-8").lower().replace("\n", " \n ") + " "
    counts: dict[str, list[int]] = defaultdict(list)
    for words, kind in language.mwes:
        counts[kind].append(text.count(" " + " ".join(words).lower() + " "))
    for kind, values in counts.items():
        assert min(values) >= 10, (kind, sorted(values)[:5])
        # Listed in rank order within a kind: frequencies fall with rank.
        assert spearmanr(np.arange(len(values)), values).statistic < -0.5, kind


def test_rank_frequency_is_zipf_like(corpus_1m):
    counts = Counter(corpus_1m.read_text(encoding="utf-8").lower().split())
    frequencies = np.array(sorted(counts.values(), reverse=True), dtype=float)
    ranks = np.arange(1, len(frequencies) + 1)
    window = slice(10, 3000)
    slope = np.polyfit(np.log(ranks[window]), np.log(frequencies[window]), 1)[0]
    assert -1.5 < slope < -0.8, slope
    assert len(counts) > 10_000


# -- the corpus writer -----------------------------------------------------------------------------


def test_corpus_is_deterministic_and_a_prefix_of_larger_ones(tmp_path):
    small, again, larger, other = (tmp_path / f"{n}.txt" for n in ("small", "again", "larger", "other"))
    n_small = write_synthetic_corpus(small, 30_000, seed=3)
    write_synthetic_corpus(again, 30_000, seed=3)
    write_synthetic_corpus(larger, 400_000, seed=3)
    write_synthetic_corpus(other, 30_000, seed=4)
    assert small.read_bytes() == again.read_bytes()
    assert larger.read_bytes().startswith(small.read_bytes())
    assert other.read_bytes() != small.read_bytes()
    assert n_small == len(small.read_text(encoding="utf-8").split())
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.integers(min_value=1, max_value=60_000), seed=st.sampled_from([0, 1]))
def test_corpus_holds_the_fewest_paragraphs_reaching_the_size(tmp_path, tokens, seed):
    path = tmp_path / "c.txt"
    written = write_synthetic_corpus(path, tokens, seed)
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    assert lines[-1] == "" and all(lines[:-1])
    paragraphs = lines[:-1]
    words = [len(p.split(" ")) for p in paragraphs]
    assert sum(words) == written >= tokens
    assert sum(words[:-1]) < tokens
    for paragraph in paragraphs:
        assert paragraph == paragraph.strip() and "  " not in paragraph
        assert not paragraph[0].islower() and paragraph[-1] in ".?"


def test_tagged_sentences_file(tmp_path):
    path = tmp_path / "tagged.tsv"
    write_tagged_sentences(path, 40, seed=2)
    blocks = path.read_text(encoding="utf-8").split("\n\n")
    assert blocks[-1] == "" and len(blocks) == 41
    for block in blocks[:-1]:
        rows = [line.split("\t") for line in block.split("\n")]
        assert all(len(row) == 2 and row[0] and row[1] in PTB for row in rows)
        assert rows[-1][1] == "."
    copy = tmp_path / "again.tsv"
    write_tagged_sentences(copy, 40, seed=2)
    assert copy.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("call", [lambda p: write_synthetic_corpus(p, 0, 0), lambda p: write_tagged_sentences(p, 0, 0),
                                  lambda p: write_synthetic_corpus(p, 10, -1)])
def test_bad_sizes_and_seeds_are_one_line_errors(tmp_path, call):
    with pytest.raises(SpanftError):
        call(tmp_path / "out.txt")
    assert list(tmp_path.iterdir()) == []


# -- WikiText: local file and hub ------------------------------------------------------------------

WIKI = (
    " \n"
    " = Velk Morrow = \n"
    " \n"
    " Velk Morrow is an invented place used in these tests . It has two @-@ storey houses . \n"
    " \n"
    " = = History = = \n"
    " \n"
    " In 1901 , the pruns arrived <unk> at the bay . \n"
    "\n"
    "  A second paragraph, raw style.  \n"
)
WIKI_PARAGRAPHS = [
    "Velk Morrow is an invented place used in these tests . It has two @-@ storey houses .",
    "In 1901 , the pruns arrived <unk> at the bay .",
    "A second paragraph, raw style.",
]


def test_local_wikitext_keeps_paragraphs_and_logs_what_it_dropped(tmp_path, caplog):
    source, out = tmp_path / "wiki.train.tokens", tmp_path / "corpus" / "train.txt"
    source.write_text("\ufeff" + WIKI, encoding="utf-8")
    with caplog.at_level("INFO", logger="spanft"):
        assert corpus.write_local_corpus(source, out) == 3
    assert out.read_text(encoding="utf-8") == "\n".join(WIKI_PARAGRAPHS) + "\n"
    assert "dropped 5 blank lines" in caplog.text and "2 ' = Heading = ' lines" in caplog.text


@pytest.mark.parametrize(
    "content, message",
    [
        (b" = Only = \n\n \n", "no text paragraphs"),
        (b"fine line\nbad \xff byte\n", r"wiki\.train\.raw:2: not valid UTF-8"),
    ],
)
def test_local_wikitext_errors_leave_no_output(tmp_path, content, message):
    source, out = tmp_path / "wiki.train.raw", tmp_path / "train.txt"
    source.write_bytes(content)
    with pytest.raises(SpanftError, match=message):
        corpus.write_local_corpus(source, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wiki.train.raw"]


def test_local_wikitext_missing_file(tmp_path):
    with pytest.raises(SpanftError, match="not found"):
        corpus.write_local_corpus(tmp_path / "absent.tokens", tmp_path / "out.txt")


@given(st.lists(st.text(alphabet=" =ab.\t", max_size=12), max_size=30))
def test_wikitext_normalisation_accounts_for_every_line(lines):
    stats = corpus._LineStats()
    kept = list(corpus.normalise_wikitext(lines, stats))
    assert stats.kept + stats.blank + stats.headings == len(lines) and stats.kept == len(kept)
    assert all(k and k == k.strip() for k in kept)
    assert stats.blank == sum(1 for line in lines if not line.strip())


class FakeDataset:
    def __init__(self, columns: dict[str, list[str]]):
        self.columns = columns
        self.column_names = list(columns)

    def __len__(self):
        return len(next(iter(self.columns.values())))

    def __getitem__(self, key: slice):
        return {name: values[key] for name, values in self.columns.items()}


def test_hf_source_reads_the_text_column(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def fake_load_dataset(path, name=None, split=None, **kwargs):
        calls.append((path, name, split))
        return datasets.Dataset.from_dict({"text": WIKI.splitlines(keepends=True)})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    out = tmp_path / "train.txt"
    assert corpus.write_hf_corpus("Salesforce/wikitext", "wikitext-103-raw-v1", "train", out) == 3
    assert calls == [("Salesforce/wikitext", "wikitext-103-raw-v1", "train")]
    assert out.read_text(encoding="utf-8").splitlines() == WIKI_PARAGRAPHS


COMMITS = {None: "a" * 40, "v1.0": "b" * 40}  # the hub's answer per revision: main and a tag


def test_hf_corpus_records_the_commit_of_the_revision_it_read(tmp_path, monkeypatch):
    # WikiText's revision (params corpus.hf_revision) resolved to its commit, recorded and reported.
    datasets = pytest.importorskip("datasets")

    read = []

    def fake_load_dataset(path, name=None, split=None, revision=None, **kwargs):
        read.append(revision)
        return datasets.Dataset.from_dict({"text": WIKI.splitlines(keepends=True)})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    monkeypatch.setattr(provenance, "hub_commit", lambda repo_id, revision=None, repo_type="dataset": COMMITS[revision])
    out, record_out = tmp_path / "train.txt", tmp_path / "provenance.json"
    corpus.write_corpus(out, source="hf", hf_id="Salesforce/wikitext", hf_config="wikitext-103-raw-v1",
                        hf_split="train", hf_revision="v1.0", record_out=record_out)
    record = provenance.read_corpus_record(record_out)
    print("corpus record:", record)
    assert read == ["v1.0"]
    assert record["revision"] == "b" * 40 and record["requested_revision"] == "v1.0"
    assert record["id_or_path"] == "Salesforce/wikitext" and record["config"] == "wikitext-103-raw-v1"
    assert record["digest"] == provenance.paths_digest([out])
    line = summary_lines([], [], [], record)[2]
    assert line.startswith("- Corpus: source hf, id_or_path Salesforce/wikitext, revision bbbbbbbbbbbb…"), line


def test_hf_source_without_network_points_to_the_local_source(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'Salesforce/wikitext' on the Hub (LocalEntryNotFoundError)\nmore")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(SpanftError) as error:
        corpus.write_hf_corpus("Salesforce/wikitext", "wikitext-103-raw-v1", "train", tmp_path / "train.txt")
    message = str(error.value)
    assert "\n" not in message and "corpus.source: local" in message and "corpus.local_path" in message
    assert list(tmp_path.iterdir()) == []


def test_hf_source_without_text_column(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: FakeDataset({"sentence": ["x"]}))
    with pytest.raises(SpanftError, match="no 'text' column"):
        corpus.write_hf_corpus("some/id", None, "train", tmp_path / "train.txt")


# -- command line ----------------------------------------------------------------------------------


def test_cli_synthetic_with_tagged_sentences(tmp_path):
    out, tagged = tmp_path / "data" / "train.txt", tmp_path / "data" / "tagged.tsv"
    argv = ["-q", "corpus", "--out", str(out), "--tokens", "5000", "--seed", "3",
            "--tagged-out", str(tagged), "--tagged-sentences", "30"]
    assert main(argv) == 0
    assert 5000 <= len(out.read_text(encoding="utf-8").split()) < 5300
    assert tagged.read_text(encoding="utf-8").count("\n\n") == 30


def test_cli_local_corpus_writes_no_synthetic_tagged_sentences(tmp_path):
    source, out, tagged = tmp_path / "wiki.train.tokens", tmp_path / "train.txt", tmp_path / "tagged.tsv"
    source.write_text(WIKI, encoding="utf-8")
    argv = ["-q", "corpus", "--source", "local", "--local-path", str(source), "--out", str(out),
            "--tagged-out", str(tagged), "--tagged-sentences", "5"]
    assert main(argv) == 0
    assert out.read_text(encoding="utf-8").splitlines() == WIKI_PARAGRAPHS
    assert not tagged.exists()  # synthetic tags describe the synthetic language only


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--source", "local"], "corpus.local_path is not set"),
        (["--source", "local", "--local-path", "nowhere.tokens"], "nowhere.tokens: WikiText file"),
        (["--tokens", "0"], "corpus.tokens must be > 0"),
        (["--tagged-out", "t.tsv", "--tagged-sentences", "0"], "corpus.tagged_sentences must be > 0"),
    ],
)
def test_cli_errors_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "train.txt"
    assert main(["corpus", "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("spanft: error: ") and message in err[0]
    assert list(tmp_path.iterdir()) == []
