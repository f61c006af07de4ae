"""Every stage of dvc.yaml depends on all the code it runs, and only built backbones read the corpus.

Stages are resolved with DVC's own API (for the embedded default and for profiles/paper.yaml); the code a
stage runs is its pipeline script and every src/spanft module reachable from it through imports (module-level
and function-level, followed with ``ast``). A file of that set not under one of the stage's deps is stale
results waiting to happen: the test fails naming the stage and the file.
"""

from __future__ import annotations

import ast
import functools
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from dvc.dependency.param import ParamsDependency
from dvc.repo import Repo

from spanft.errors import SpanftError
from spanft.params.plan import Plan, plan_from_tree
from spanft.stage.names import GROUPS, stage_argv
from spanft.stage.records import RECORDS_DIR, record_path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


# ------------------------------------------------------------------------------------------- imports


def module_file(name: str) -> Path | None:
    """The source file of module ``name`` under src/ (a package's ``__init__.py``), or None."""
    base = SRC.joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def imported_names(path: Path, package: str) -> set[str]:
    """Every module name an ``import`` anywhere in ``path`` could load (``from a import b``: a and a.b)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


@functools.lru_cache(maxsize=None)
def code_files(script: Path) -> frozenset[Path]:
    """The script and every src/spanft file it reaches through imports (parent packages' __init__ included)."""
    seen = {script}
    todo = [(script, "")]
    while todo:
        path, package = todo.pop()
        for name in imported_names(path, package):
            parts = name.split(".")
            if parts[0] != "spanft":
                continue
            for depth in range(1, len(parts) + 1):
                prefix = ".".join(parts[:depth])
                found = module_file(prefix)
                if found is not None and found not in seen:
                    seen.add(found)
                    todo.append((found, prefix if found.name == "__init__.py" else prefix.rpartition(".")[0]))
    return frozenset(seen)


# ------------------------------------------------------------------------------------------- stages


def resolved_stages(project: Path) -> dict[str, dict]:
    """``{name: {cmd, deps, params, outs}}`` of every stage DVC resolves in ``project``."""
    stages = {}
    with Repo(str(project)) as repo:
        for stage in repo.index.stages:
            deps = [d.def_path for d in stage.deps if not isinstance(d, ParamsDependency)]
            params = [p for d in stage.deps if isinstance(d, ParamsDependency) for p in d.params]
            stages[stage.name] = {"cmd": stage.cmd, "deps": deps, "params": params,
                                        "outs": [o.def_path for o in stage.outs]}
    return stages


def make_project(tmp: Path, params: dict | None = None, dvc_yaml: str | None = None) -> Path:
    """A DVC project holding this repository's dvc.yaml (or ``dvc_yaml``) and the given params."""
    shutil.copytree(ROOT / ".dvc", tmp / ".dvc", ignore=shutil.ignore_patterns("tmp", "cache", "config.local"))
    (tmp / "dvc.yaml").write_text(dvc_yaml or (ROOT / "dvc.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    text = (ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8") if params is None else yaml.safe_dump(params)
    (tmp / "params.yaml").write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=tmp, check=True)
    return tmp


def script_of(cmd: str) -> Path:
    words = cmd.split()
    assert words[:1] == ["python"] and words[1].startswith("pipeline/"), f"not a pipeline script: {cmd}"
    return ROOT / words[1]


def uncovered(stage: dict) -> list[str]:
    """The code files a stage runs that none of its deps covers (a dep covers itself and what is under it)."""
    deps = [ROOT / dep for dep in stage["deps"]]
    files = code_files(script_of(stage["cmd"]))
    return sorted(str(f.relative_to(ROOT)) for f in files
                  if not any(f == dep or dep in f.parents for dep in deps))


def profile(name: str) -> dict:
    return yaml.safe_load((ROOT / "profiles" / f"{name}.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module", params=["embedded", "paper", "small"])
def stages(request, tmp_path_factory) -> dict[str, dict]:
    project = ROOT if request.param == "embedded" else make_project(tmp_path_factory.mktemp("paper"), profile("paper"))
    return resolved_stages(project)


# ------------------------------------------------------------------------------------------- tests


def test_every_stage_runs_a_pipeline_script_and_depends_on_its_code(stages):
    assert len(stages) > 20
    missing = {name: files for name, stage in stages.items() if (files := uncovered(stage))}
    assert missing == {}


def test_every_pipeline_script_is_run_by_a_stage(stages):
    used = {script_of(stage["cmd"]).name for stage in stages.values()}
    assert used == {path.name for path in (ROOT / "pipeline").glob("*.py")}


def test_the_checker_catches_a_stage_without_its_code(tmp_path):
    text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    at = text.index("  count_ngrams:")
    broken = text[:at] + text[at:].replace(" src/spanft/text,", "", 1)
    assert broken != (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    stages = resolved_stages(make_project(tmp_path, dvc_yaml=broken))
    missing = uncovered(stages["count_ngrams"])
    assert "src/spanft/text/ngrams.py" in missing and "src/spanft/text/words.py" in missing
    assert all(path.startswith("src/spanft/text/") for path in missing)


def test_function_level_imports_are_followed(tmp_path):
    script = tmp_path / "stage.py"
    script.write_text("def body():\n    from spanft.text.segmentation import make_segmenter\n", encoding="utf-8")
    files = {str(f.relative_to(ROOT)) for f in code_files(script) if f != script}
    # make_segmenter's module imports the greedy and random segmenters, the chunker and the word tokenizer
    assert {"src/spanft/__init__.py", "src/spanft/text/__init__.py", "src/spanft/text/segmentation.py",
            "src/spanft/text/chunker.py", "src/spanft/text/words.py", "src/spanft/text/greedy.py",
            "src/spanft/text/random_spans.py"} <= files


def test_only_built_backbones_read_the_corpus(stages):
    backbone_stages = {name: stage for name, stage in stages.items() if "backbone@" in name}
    assert backbone_stages
    for name, stage in backbone_stages.items():
        reads_corpus = "data/corpus/train.txt" in stage["deps"]
        assert reads_corpus == name.startswith("build_backbone@"), name


def test_paths_outside_the_workspace_are_deps(tmp_path):
    outside = tmp_path / "outside"
    params = profile("embedded")
    params["corpus"].update(source="local", local_path=str(outside / "wikitext" / "wiki.train.tokens"))
    params["data"].update(source="local", dir=str(outside / "data"))
    params["backbones"]["local"] = {"mine": {"path": str(outside / "model")}}
    stages = resolved_stages(make_project(tmp_path / "project", params))
    assert str(outside / "wikitext" / "wiki.train.tokens") in stages["corpus"]["deps"]
    outside_deps = {name: [dep for dep in stage["deps"] if dep.startswith(str(outside))] for name, stage in stages.items()}
    for task, folder in params["tasks"].items():  # each task its own folder, nothing else outside
        assert outside_deps[f"prepare_task@{task}"] == [str(outside / "data" / folder)], task
    assert str(outside / "model") in stages["copy_backbone@mine"]["deps"]
    assert outside_deps["tagger"] == [str(outside / "data" / "conll2003")]  # CoNLL-2003's POS, chunker.source conll
    readers = {name for name, deps in outside_deps.items() if deps}
    assert readers == {"corpus", "tagger", "copy_backbone@mine", *(f"prepare_task@{task}" for task in params["tasks"])}


# ------------------------------------------------------------------------------------------- studies


def _plan_of(stages: dict[str, dict]) -> Plan:
    return plan_from_tree(profile("paper") if "fetch_backbone@bert-base" in stages else yaml.safe_load(
        (ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8")))


def test_fine_tuning_stages_are_exactly_the_planned_runs(stages):
    params = _plan_of(stages)
    planned = {run.key(): run for run in params.runs()}
    seen = {}
    for name, stage in stages.items():
        if script_of(stage["cmd"]).name != "finetune.py":
            continue
        words = stage_argv(params, name, "finetune")
        key = (words[0], words[1], words[2], words[3], int(words[4]))
        assert key in planned and key not in seen, (name, key)
        run = seen[key] = planned[key]
        assert _data_outs(name, stage) == [run.out], name
        assert run.data in stage["deps"] and run.backbone_dir in stage["deps"], name
        assert stage["params"] == [f"hparams.{run.task}", "threads"], name
        assert ("baseline" in name) == (run.data.startswith("data/tasks/")) or run.variant == "cnn-noseg", name
    assert set(seen) == set(planned)


def _data_outs(name: str, stage: dict) -> list[str]:
    """The stage's outs but its params record (stage/records.py)."""
    return [out for out in stage["outs"] if out != record_path(name)]


def test_every_stage_with_params_records_those_it_used(stages):
    """The record is an out exactly where the script writes one: a stage that declares params (and is not the
    whole-file check), under the name DVC gives the member."""
    for name, stage in stages.items():
        records = stage["params"] and name != "check_params"
        assert (record_path(name) in stage["outs"]) == bool(records), name
        assert [out for out in stage["outs"] if out.startswith(RECORDS_DIR)] == ([record_path(name)] if records else [])


def test_no_stage_command_holds_params_text(stages):
    """Every cmd is a fixed line of dvc.yaml: no foreach key, matrix item or vars value reaches a shell."""
    template = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    for name, stage in stages.items():
        group = template[name.partition("@")[0]]
        assert stage["cmd"] == group.get("do", group)["cmd"], name
        assert "${" not in stage["cmd"], name


def test_every_group_stage_finds_its_arguments_from_its_name(stages):
    """The script of a foreach/matrix stage, given no arguments, writes exactly the outs DVC declares."""
    params = _plan_of(stages)
    grouped = {name: stage for name, stage in stages.items() if "@" in name}
    template = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert {group for group, spec in template.items() if "foreach" in spec or "matrix" in spec} == set(GROUPS)
    assert {name.partition("@")[0] for name in grouped} <= set(GROUPS)
    for name, stage in grouped.items():
        script = script_of(stage["cmd"]).stem
        argv = stage_argv(params, name, script)
        if script == "finetune":
            continue  # test_fine_tuning_stages_are_exactly_the_planned_runs
        if script == "submission":
            assert all(out.startswith(f"{argv[2]}/glue-{argv[0]}-") for out in _data_outs(name, stage)), name
            assert argv[1] in stage["deps"], name
            continue
        assert _data_outs(name, stage) == [argv[1] if script in ("prepare_task", "backbone", "dictionary") else argv[2]], name
        inputs = [arg for arg in argv if arg.startswith("data/") and arg not in stage["outs"]]
        assert all(arg in stage["deps"] for arg in inputs), (name, inputs)


def test_a_stage_name_outside_its_script_or_params_is_one_line():
    params = plan_from_tree(yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8")))
    for stage, script in (("prepare_task@nosuch", "prepare_task"), ("glue_sf@tiny-cola-1", "segment"),
                          ("prepare_task", "prepare_task")):
        with pytest.raises(SpanftError, match="DVC_STAGE="):
            stage_argv(params, stage, script)
    assert stage_argv(params, "backbones_sf@tiny-bpe-mrpc-1", "finetune") == ["backbones", "tiny-bpe", "mrpc", "sf", "1"]


def test_step_cost_depends_on_what_its_glue_runs_read(stages):
    """It times each glue task's baseline and SF on the SF run's input (spans dropped for the baseline)."""
    params = _plan_of(stages)
    stage = stages["step_cost"]
    for run in (r for r in params.runs("glue") if r.variant == "sf"):
        for needed in (run.data, run.backbone_dir):
            assert any(needed == dep or needed.startswith(dep.rstrip("/") + "/") for dep in stage["deps"]), needed
    assert {"hparams", "threads", "studies.glue"} <= set(stage["params"])
    assert _data_outs("step_cost", stage) == ["data/step_cost.json"] and "data/step_cost.json" in stages["report"]["deps"]


def test_baselines_read_no_dictionary(stages):
    for name, stage in stages.items():
        if "baseline@" in name:
            assert not any(dep.startswith(("data/dicts", "data/segmented")) for dep in stage["deps"]), name


def test_submission_zips_every_glue_variant(stages):
    plan = _plan_of(stages)
    for backbone in plan.studies["glue"].backbones:
        outs = _data_outs(f"submission@{backbone}", stages[f"submission@{backbone}"])
        assert outs == [f"data/submissions/glue-{backbone}-{variant}.zip" for variant in plan.variant_names("glue")]
