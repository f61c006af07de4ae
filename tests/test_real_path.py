"""The real path through ``dvc repro``: official local file layouts, a local encoder, a CoNLL-trained tagger.

Every file is generated here from an invented lexicon (no dataset text): GLUE TSVs (CoLA without a header,
MRPC with a UTF-8 BOM, RTE with quote characters inside fields and no test split), SNLI jsonl, CoNLL-2003
column files in IOB1 (train) and IOB2 (dev, test), a WikiText ``wiki.train.tokens`` and a tiny encoder saved
as safetensors. One module-scoped ``dvc repro`` backs every test; the last test edits one local file.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
from pathlib import Path

import pytest
from test_graph import (
    TINY_HPARAMS,
    _downstream,
    dvc,
    new_project,
    ran_stages,
    reduced_params,
)

# ------------------------------------------------------------------------------------- an invented English

LEXICON = {
    "DT": ["the", "a", "every"],
    "JJ": ["green", "wobbly", "snarp", "tall"],
    "NN": ["frim", "blorp", "zandle", "quib", "morv", "plink"],
    "VBD": ["sang", "glimmed", "trotted", "zonked", "found"],
    "IN": ["near", "under", "with"],
}
PEOPLE = [["Quellin"], ["Marbo", "Tesk"], ["Ivra"]]
PLACES = [["Zorvania"], ["Blarth", "Hollow"]]


def noun_phrase(rng: random.Random) -> list[tuple[str, str]]:
    words = [(rng.choice(LEXICON["DT"]), "DT")]
    if rng.random() < 0.5:
        words.append((rng.choice(LEXICON["JJ"]), "JJ"))
    return words + [(rng.choice(LEXICON["NN"]), "NN")]


def tagged_sentence(rng: random.Random) -> list[tuple[str, str]]:
    words = noun_phrase(rng) + [(rng.choice(LEXICON["VBD"]), "VBD")]
    if rng.random() < 0.6:
        words += [(rng.choice(LEXICON["IN"]), "IN")] + noun_phrase(rng)
    words[0] = (words[0][0].capitalize(), words[0][1])
    return words + [(".", ".")]


def sentence(rng: random.Random) -> str:
    return " ".join(word for word, _ in tagged_sentence(rng))


# ------------------------------------------------------------------------------------- official layouts


def write_cola(folder: Path, rng: random.Random) -> None:
    """Header-less train/dev (source, label, annotation, sentence); a test file with its header."""
    folder.mkdir(parents=True)
    for name, rows in (("train.tsv", 40), ("dev.tsv", 16)):
        lines = []
        for _ in range(rows):
            label = rng.randint(0, 1)
            lines.append(f"zq{rng.randint(1, 9):02d}\t{label}\t{'' if label else '*'}\t{sentence(rng)}")
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    test = ["index\tsentence"] + [f"{i}\t{sentence(rng)}" for i in range(12)]
    (folder / "test.tsv").write_text("\n".join(test) + "\n", encoding="utf-8")


def write_mrpc(folder: Path, rng: random.Random) -> None:
    """Headers; train starts with a UTF-8 BOM."""
    folder.mkdir(parents=True)
    for name, rows, first in (("train.tsv", 40, "Quality"), ("dev.tsv", 16, "Quality"), ("test.tsv", 12, "index")):
        lines = [f"{first}\t#1 ID\t#2 ID\t#1 String\t#2 String"]
        lines += [f"{rng.randint(0, 1) if first == 'Quality' else i}\t{100 + i}\t{200 + i}\t{sentence(rng)}\t"
                  f"{sentence(rng)}" for i in range(rows)]
        text = "\n".join(lines) + "\n"
        (folder / name).write_bytes(("\ufeff" if name == "train.tsv" else "").encode("utf-8") + text.encode("utf-8"))


def write_rte(folder: Path, rng: random.Random) -> None:
    """Headers, quote characters inside fields (GLUE files are read with quoting off), no test split."""
    folder.mkdir(parents=True)
    for name, rows in (("train.tsv", 40), ("dev.tsv", 16)):
        lines = ["index\tsentence1\tsentence2\tlabel"]
        for i in range(rows):
            first = f'"{sentence(rng)}' if i % 3 == 0 else sentence(rng)  # an opening quote never closed
            second = f"The \"{rng.choice(LEXICON['NN'])}\" {rng.choice(LEXICON['VBD'])} ' ."
            lines.append(f"{i}\t{first}\t{second}\t{rng.choice(['entailment', 'not_entailment'])}")
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_snli(folder: Path, rng: random.Random) -> None:
    folder.mkdir(parents=True)
    for split, rows in (("train", 40), ("dev", 16), ("test", 16)):
        records = [{"sentence1": sentence(rng), "sentence2": sentence(rng),
                    "gold_label": rng.choice(["entailment", "neutral", "contradiction"])} for _ in range(rows)]
        records.append({"sentence1": sentence(rng), "sentence2": sentence(rng), "gold_label": "-"})
        (folder / f"snli_1.0_{split}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def conll_sentence(rng: random.Random, iob1: bool) -> list[str]:
    """``token POS chunk NER`` lines: a person, a verb, maybe a place, then a plain clause; two people
    side by side sometimes, so IOB1's ``B-`` (an entity right after one of its type) occurs."""
    def entity(words: list[str], kind: str, after_same: bool) -> list[str]:
        tags = [f"I-{kind}"] * len(words)
        if not iob1 or after_same:
            tags[0] = f"B-{kind}"
        return [f"{w} NNP B-NP {t}" for w, t in zip(words, tags)]

    lines = entity(rng.choice(PEOPLE), "PER", False)
    if rng.random() < 0.3:
        lines += entity(rng.choice(PEOPLE), "PER", True)
    lines.append(f"{rng.choice(LEXICON['VBD'])} VBD B-VP O")
    if rng.random() < 0.5:
        lines += [f"{rng.choice(LEXICON['IN'])} IN B-PP O"] + entity(rng.choice(PLACES), "LOC", False)
    lines += [f"{word} {tag} I-NP O" for word, tag in tagged_sentence(rng)]
    return lines


def write_conll(path: Path, rng: random.Random, sentences: int, iob1: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    blocks = ["-DOCSTART- -X- -X- O"] + ["\n".join(conll_sentence(rng, iob1)) for _ in range(sentences)]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def write_wikitext(path: Path, rng: random.Random) -> None:
    path.parent.mkdir(parents=True)
    lines = []
    for section in range(30):
        lines += ["", f" = Section {section} = ", ""] + [" " + " ".join(sentence(rng) for _ in range(6))
                                                          for _ in range(5)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_official_files(outside: Path) -> dict[str, Path]:
    rng = random.Random(13)
    data = outside / "data"
    write_cola(data / "glue_data" / "CoLA", rng)
    write_mrpc(data / "glue_data" / "MRPC", rng)
    write_rte(data / "my_glue" / "RTE", rng)  # a folder of the user's own (params tasks.rte)
    write_snli(data / "snli_1.0", rng)
    write_conll(data / "conll2003" / "eng.train", rng, 60, iob1=True)
    write_conll(data / "conll2003" / "valid.txt", rng, 20, iob1=False)
    write_conll(data / "conll2003" / "test.txt", rng, 20, iob1=False)
    wiki = outside / "wikitext" / "wiki.train.tokens"
    write_wikitext(wiki, rng)
    return {"data": data, "wiki": wiki}


def write_encoder(wiki: Path, out: Path) -> Path:
    from spanft.model.build import BackboneConfig, make_backbone

    make_backbone(wiki, out, BackboneConfig(vocab_size=120, hidden=16, layers=1, heads=2, intermediate=32,
                                            max_len=128, mlm_steps=0))
    return out


# ------------------------------------------------------------------------------------- the params file

GLUE_TASKS = ["cola", "mrpc", "rte"]


def real_params(data: Path, wiki: Path, model: Path) -> dict:
    params = reduced_params()
    params["profile"] = "small"
    params["tasks"] = {"cola": "glue_data/CoLA", "mrpc": "glue_data/MRPC", "rte": "my_glue/RTE", "snli": "snli_1.0",
                       "conll2003": "conll2003"}
    params["data"].update(source="local", dir=str(data))
    params["corpus"].update(source="local", local_path=str(wiki))
    params["chunker"]["source"] = "conll"
    params["dict_sizes"] = [200]
    params["dict_size"] = 200
    params["backbones"]["build"] = {}
    params["backbones"]["local"] = {"mine": {"path": str(model)}}
    params["reports"]["paper_names"] = {"mine": "bert-base-uncased"}
    params["hparams"] = {task: dict(TINY_HPARAMS) for task in params["tasks"]}
    for study in params["studies"].values():
        study["backbones"] = ["mine"]
    params["studies"]["glue"]["tasks"] = GLUE_TASKS
    params["studies"]["dictsize"].update(tasks=["cola"], methods=["ngram"])
    params["studies"]["backbones"]["backbones"] = []  # Table 4 left out: one backbone here
    params["studies"]["snli"]["encoders"] = []  # Table 7's encoders: the graph test runs one
    return params


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    if shutil.which("dvc") is None:
        pytest.skip("dvc is not installed")
    root = tmp_path_factory.mktemp("real")
    files = write_official_files(root / "outside")
    model = write_encoder(files["wiki"], root / "outside" / "encoder")
    project = new_project(root / "project", real_params(files["data"], files["wiki"], model))
    first = dvc(project, "repro")
    return project, files, model, first


def test_the_encoder_is_saved_as_safetensors(real):
    _, _, model, _ = real
    assert (model / "model.safetensors").is_file()
    assert not (model / "pytorch_model.bin").exists()


def test_repro_runs_to_every_report(real):
    project, _, _, first = real
    ran = ran_stages(first.stdout)
    assert {"tagger", "copy_backbone@mine", "prepare_task@rte", "ner_sf@mine-conll2003-1",
            "glue_sf@mine-rte-1", "step_cost", "report"} <= ran
    tables = project / "reports" / "tables"
    for number in range(1, 9):
        assert (tables / f"table{number}.md").stat().st_size > 0
    cost = (tables / "table3.md").read_text(encoding="utf-8")
    # the step_cost stage timed every task; under a busy suite the timing may have waited for a core, and the
    # table must then say "contended" rather than draw a ratio from it
    assert "not measured" not in cost
    assert (re.search(r"timed side by side \(mean over [1-3] of 3 tasks(\)|; left out, contended: )", cost)
            or "no step-time figure (every task left out, contended: cola, mrpc, rte)" in cost), cost
    index = (project / "reports" / "index.md").read_text(encoding="utf-8")
    assert index.startswith("Profile: small") and "# Summary" in index
    assert (project / "reports" / "figures" / "figure3.png").read_bytes()[:4] == b"\x89PNG"


def test_every_generated_row_is_read(real):
    """Rows in = rows prepared: BOM, quotes and IOB1 lose nothing (SNLI's '-' rows are dropped)."""
    import pyarrow.parquet as pq

    project, files, _, _ = real
    data = files["data"]

    def prepared(task: str, split: str) -> int:
        return pq.read_metadata(project / "data" / "tasks" / task / f"{split}.parquet").num_rows

    assert prepared("cola", "train") == 40 and prepared("cola", "test") == 12
    assert prepared("mrpc", "train") == 40 and prepared("rte", "train") == 40
    assert prepared("snli", "train") == 40 and prepared("conll2003", "train") == 60
    assert not (project / "data" / "tasks" / "rte" / "test.parquet").exists()
    quoted = (data / "my_glue" / "RTE" / "train.tsv").read_text(encoding="utf-8").count('\t"')
    assert quoted > 0


def test_submission_says_what_it_skipped(real):
    project, _, _, first = real
    skipped = re.findall(r"submission: (\S+)\.tsv skipped: ([^\n]+)", first.stdout + first.stderr)
    assert {stem for stem, _ in skipped} == {"RTE"}, skipped
    import zipfile

    with zipfile.ZipFile(project / "data" / "submissions" / "glue-mine-sf.zip") as archive:
        names = set(archive.namelist())
    assert {"CoLA.tsv", "MRPC.tsv"} <= names and "RTE.tsv" not in names


def run_inputs(project: Path, task: str) -> dict:
    path = project / "data" / "runs" / "glue" / "mine" / task / "sf" / "seed1" / "metrics.json"
    return json.loads(path.read_text(encoding="utf-8"))["inputs"]


def content_digest(root: Path, relative: list[str]) -> str:
    """SHA-256 over each file's path relative to ``root`` and its bytes, in path order."""
    digest = hashlib.sha256()
    for name in sorted(relative):
        digest.update(name.encode("utf-8") + b"\0" + (root / name).read_bytes() + b"\0")
    return digest.hexdigest()


def test_metrics_record_the_local_inputs(real):
    project, files, model, _ = real
    data = files["data"]
    mrpc, rte = run_inputs(project, "mrpc"), run_inputs(project, "rte")
    mrpc_folder = data / "glue_data" / "MRPC"  # the task's folder: what its stage reads, and all it reads
    assert mrpc["data"]["id_or_path"] == str(mrpc_folder) and mrpc["data"]["source"] == "local"
    assert mrpc["data"]["files"] == {"train": "train.tsv", "validation": "dev.tsv", "test": "test.tsv"}
    assert mrpc["data"]["digest"] == content_digest(mrpc_folder, list(mrpc["data"]["files"].values()))
    assert rte["data"]["absent_splits"] == ["test"]
    assert rte["data"]["digest"] == content_digest(data / "my_glue" / "RTE", ["train.tsv", "dev.tsv"])
    # a model directory's digest leaves out its own provenance record (make_backbone wrote one here)
    encoder_files = [str(p.relative_to(model)) for p in model.rglob("*") if p.is_file() and p.name != "provenance.json"]
    assert mrpc["backbone"] == {"source": "local", "id_or_path": str(model),
                                "digest": content_digest(model, encoder_files)}


def test_table6_names_the_conll_tagger_and_its_accuracy(real):
    project, _, _, _ = real
    table6 = (project / "reports" / "tables" / "table6.md").read_text(encoding="utf-8")
    assert "CoNLL" in table6
    assert re.search(r"accuracy[^\n]*\d+\.\d", table6), table6


def raw_entities(path: Path) -> list[set[tuple[int, int, str]]]:
    """Entities of each sentence of a CoNLL file, read by the IOB1 rule (which also reads IOB2 right): an
    entity starts at B-X, or at I-X unless the previous tag is of type X."""
    sentences = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        tags = [line.split()[-1] for line in block.splitlines() if line and not line.startswith("-DOCSTART-")]
        if not tags:
            continue
        spans, start = set(), None
        for i, tag in enumerate([*tags, "O"]):
            kind = tag[2:]
            continues = start is not None and tag.startswith("I-") and kind == tags[start][2:]
            if start is not None and not continues:
                spans.add((start, i, tags[start][2:]))
                start = None
            if tag != "O" and start is None:
                start = i
        sentences.append(spans)
    return sentences


def prepared_entities(parquet: Path) -> list[set[tuple[int, int, str]]]:
    """Entities of prepared IOB2 tag ids: B-X starts one, I-X continues it."""
    import pyarrow.parquet as pq

    from spanft.data.registry import CONLL_TAGS

    sentences = []
    for row in pq.read_table(parquet).to_pylist():
        tags = [CONLL_TAGS[t] for t in row["tags"]] + ["O"]
        spans, start = set(), None
        for i, tag in enumerate(tags):
            if start is not None and tag != f"I-{tags[start][2:]}":
                spans.add((start, i, tags[start][2:]))
                start = None
            if tag.startswith("B-"):
                start = i
            assert not (tag.startswith("I-") and start is None), row  # IOB2: no entity starts with I-
        sentences.append(spans)
    return sentences


def test_iob1_and_iob2_files_give_the_same_entities_and_an_entity_f1(real):
    project, files, _, _ = real
    tasks = project / "data" / "tasks" / "conll2003"
    data = files["data"]
    for raw, split in ((data / "conll2003" / "eng.train", "train"), (data / "conll2003" / "valid.txt", "validation")):
        assert prepared_entities(tasks / f"{split}.parquet") == raw_entities(raw), split
    assert "I-PER B-PER" in " ".join(line.split()[-1] for line in (data / "conll2003" / "eng.train").read_text().splitlines()
                                     if line.strip())
    for variant in ("baseline", "sf"):
        path = project / "data" / "runs" / "ner" / "mine" / "conll2003" / variant / "seed1" / "metrics.json"
        scores = json.loads(path.read_text(encoding="utf-8"))["metrics"]
        assert {"validation", "test"} <= set(scores)
        assert all(0.0 <= scores[split]["f1"] <= 1.0 for split in scores), scores


def _stale(project: Path) -> set[str]:
    return set(json.loads(dvc(project, "status", "--json").stdout or "{}"))


def test_editing_one_local_file_reruns_its_readers_and_what_follows(real):
    """Each prepare stage depends on its task's folder only: editing MRPC's dev file makes exactly
    prepare_task@mrpc stale, and ``dvc repro`` re-runs it and what follows (MRPC's segmentation, runs, reports)."""
    project, files, _, _ = real
    assert _stale(project) == set()
    before = {task: run_inputs(project, task)["data"]["digest"] for task in ("cola", "mrpc")}
    dev = files["data"] / "glue_data" / "MRPC" / "dev.tsv"
    dev.write_text(dev.read_text(encoding="utf-8") + "1\t900\t901\tA frim sang .\tThe frim sang .\n", encoding="utf-8")
    readers = {"prepare_task@mrpc"}
    assert _stale(project) == readers
    again = ran_stages(dvc(project, "repro").stdout)
    assert again <= readers | _downstream(project, {"prepare_task@mrpc"}), sorted(again)
    assert {"prepare_task@mrpc", "segment_ngram@mrpc", "glue_sf@mine-mrpc-1", "report"} <= again
    followers = again - readers
    assert not any(re.search(r"cola|rte|snli|conll2003|chunker", name) for name in followers), sorted(followers)
    after = {task: run_inputs(project, task)["data"]["digest"] for task in ("cola", "mrpc")}
    assert after["cola"] == before["cola"] and after["mrpc"] != before["mrpc"]
    assert _stale(project) == set()
