"""The DVC graph end to end on a reduced copy of the embedded profile (small corpus, one task per study).

One `dvc repro` (about 3 minutes on 2 cores; built once a run, tests/conftest.py: reduced_graph_run, which
test_users_own_run.py's clone restores from DVC's run-cache) backs every test here: the graph runs to the
reports, a second `dvc repro` runs nothing, and a `dict_size` change reaches no baseline stage.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from spanft.readme import committed
from spanft.stage.progress import headline_lines

ROOT = Path(__file__).resolve().parents[1]

REDUCED = {
    "corpus": {"tokens": 300_000, "tagged_sentences": 300},
    "ngrams": {"min_count": 2},
    "dict_sizes": [500, 2000],
    "dict_size": 1000,
    "data": {"synthetic": {"train_size": 48, "eval_size": 32, "test_size": 32}},
    "tasks": {"cola": "glue_data/CoLA", "mrpc": "glue_data/MRPC", "snli": "snli_1.0", "conll2003": "conll2003"},
    "studies": {
        "glue": {"backbones": ["tiny"], "tasks": ["cola", "mrpc"], "seeds": [1]},
        "backbones": {"backbones": ["tiny"], "tasks": ["cola"], "seeds": [2]},
        "snli": {"backbones": ["tiny"], "seeds": [1], "encoders": ["attention-max"]},
        "ablation": {"backbones": ["tiny"], "tasks": ["cola"], "seeds": [1]},
        "ner": {"backbones": ["tiny"], "seeds": [1]},
        "dictsize": {"backbones": ["tiny"], "tasks": ["cola"], "seeds": [1], "methods": ["ngram", "random"]},
    },
    "reports": {"mcnemar_tasks": ["cola", "mrpc"], "figure2": {"tasks": ["cola"], "examples": 2}},
}
TINY_BACKBONE = {"vocab_size": 400, "hidden": 32, "layers": 1, "heads": 2, "intermediate": 64, "max_len": 128,
                 "mlm_steps": 2, "mlm_batch_size": 8, "vocab_lines": 2000}
TINY_HPARAMS = {"epochs": 1, "lr": 1.0e-3, "batch_size": 16, "max_seq_len": 64, "max_span_len": 8}


def _merge(base: dict, override: dict) -> dict:
    merged = dict(base)
    for key, value in override.items():
        nested = isinstance(value, dict) and isinstance(base.get(key), dict) and key != "tasks"  # tasks: replaced
        merged[key] = _merge(base[key], value) if nested else value
    return merged


def reduced_params() -> dict:
    tree = yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))
    tree = _merge(tree, REDUCED)
    tree["backbones"]["build"] = {"tiny": {**tree["backbones"]["build"]["tiny"], **TINY_BACKBONE}}
    tree["reports"]["paper_names"] = {"tiny": "bert-base-uncased"}
    tree["hparams"] = {task: dict(TINY_HPARAMS) for task in tree["tasks"]}
    return tree


def dvc(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": str(project / "src")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # stages write __pycache__ into src/, as on a user's machine
    done = subprocess.run(["dvc", *args], cwd=project, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise AssertionError(f"dvc {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


def new_project(project: Path, params: dict) -> Path:
    """A copy of the graph (dvc.yaml, pipeline/, src/, data/raw/, profiles/) with ``params`` as its params.yaml."""
    project.mkdir(parents=True, exist_ok=True)
    for name in ("dvc.yaml", ".dvcignore"):
        shutil.copy(ROOT / name, project / name)
    for name in ("src", "pipeline", "data/raw", "profiles"):
        shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    shutil.copytree(ROOT / ".dvc", project / ".dvc", ignore=shutil.ignore_patterns("tmp", "cache", "config.local"))
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    return project


@pytest.fixture(scope="module")
def project(reduced_graph_run, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A copy of the run's one reduced repro from nothing (tests/conftest.py: reduced_graph_run), and its output."""
    built, said = reduced_graph_run
    first = subprocess.CompletedProcess(["dvc", "repro"], 0, said["stdout"], said["stderr"])
    project = tmp_path_factory.mktemp("graph") / "project"
    shutil.copytree(built, project, symlinks=True)  # a DVC project copies whole: cache, run-cache and lock go along
    return project, first


def ran_stages(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def test_graph_runs_end_to_end_to_every_report(project):
    project, first = project
    ran = ran_stages(first.stdout)
    assert {"corpus", "report", "glue_baseline@tiny-cola-1", "glue_sf@tiny-cola-1",
            "dictsize_spanonly@tiny-cola-500-random-1", "snli_sf_encoder@tiny-snli-attention-max-1"} <= ran
    tables = project / "reports" / "tables"
    for number in range(1, 9):
        for suffix in ("md", "csv", "tex"):
            assert (tables / f"table{number}.{suffix}").stat().st_size > 0
    figures = project / "reports" / "figures"
    assert (figures / "figure2.md").stat().st_size > 0
    for name in ("figure3", "figure4"):
        assert (figures / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (figures / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    assert "embedded" in (tables / "table1.md").read_text(encoding="utf-8")
    assert (first.stdout + first.stderr).count("is uncased: case is folded") <= 1  # a by-design warning: once a run
    metrics = json.loads((project / "reports" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics
    assert (project / "data" / "submissions" / "glue-tiny-sf.zip").is_file()
    shown = dvc(project, "metrics", "show").stdout
    assert "reports/metrics.json" in shown


def test_each_stage_tells_its_place_and_the_graph_ends_with_a_summary(project):
    """The repro's log (not a terminal): each stage's line says k of N in DVC's order, N the stages that ran
    (a clean repro: no "at most"); no progress bar is drawn; the last stage prints the headline gains."""
    project, first = project
    ran = re.findall(r"Running stage '([^']+)'", first.stdout)
    lines = re.findall(r"^spanft: stage (\d+) of (\d+): (\S+) · ", first.stderr, flags=re.MULTILINE)
    assert [(int(k), int(n), name) for k, n, name in lines] == [(k, len(ran), name) for k, name in enumerate(ran, 1)]
    assert "\r" not in first.stdout + first.stderr
    summary = first.stderr[first.stderr.index("spanft: done: dvc repro: "):]
    assert re.match(rf"spanft: done: dvc repro: {len(ran)} stages in \d", summary), summary
    gains = headline_lines(project / "reports" / "headline.json")[0]  # each table's gain and interval, x 100
    assert re.match(r"gains x 100 \[95% interval\], synthetic data: checks the machinery, not the method: "
                    r"t1 SF − baseline [+-]?\d+\.\d+ \[[+-]?\d+\.\d+, [+-]?\d+\.\d+\];", gains)
    assert f"\nspanft: {gains}\n" in summary, summary
    assert "reports: reports/index.md" in summary
    times = json.loads((project / ".dvc" / "tmp" / "spanft-progress" / "stage-times.json").read_text())
    assert set(times) == set(ran)


def test_second_repro_does_nothing(project):
    project, _ = project
    assert any((project / "src").rglob("*.pyc")), "the stages wrote no bytecode: the case .dvcignore covers is not tried"
    second = dvc(project, "repro")
    assert ran_stages(second.stdout) == set(), second.stdout
    assert "spanft: stage" not in second.stderr
    assert "up to date" in dvc(project, "status").stdout


def _downstream(project: Path, starts: set[str]) -> set[str]:
    dot = dvc(project, "dag", "--dot").stdout
    edges: dict[str, set[str]] = {}
    for a, b in re.findall(r'"([^"]+)"\s*->\s*"([^"]+)"', dot):
        edges.setdefault(a, set()).add(b)
    seen, todo = set(starts), list(starts)
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_dict_size_change_reaches_no_baseline(project):
    project, _ = project
    lock = yaml.safe_load((project / "dvc.lock").read_text(encoding="utf-8"))
    # check_params reads the whole file; its output's bytes never change with a valid edit, so nothing below
    # it re-runs for that (the status at the end checks this)
    readers = {name for name, stage in lock["stages"].items()
               if "dict_size" in stage.get("params", {}).get("params.yaml", {}) and name != "check_params"}
    assert readers == {"dictionary"}
    affected = _downstream(project, readers)
    assert any(name.startswith("glue_sf@") for name in affected)
    assert not any("baseline" in name for name in affected), sorted(affected)
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    params["dict_size"] = 1500
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    status = dvc(project, "status").stdout
    assert "dictionary" in status and "baseline" not in status


# ------------------------------------------------------------------------------------------- files outside


def _changed(project: Path, *stages: str) -> set[str]:
    return set(json.loads(dvc(project, "status", "--json", *stages).stdout or "{}"))


def _statuses(project: Path) -> dict:
    """``dvc status --json`` of the whole graph: stage -> what DVC finds changed (stages never run included)."""
    return json.loads(dvc(project, "status", "--json").stdout or "{}")


def test_replacing_an_outside_file_changes_exactly_the_stages_that_read_it(tmp_path):
    """Over the whole graph: a file outside the workspace changes the status of exactly the stages reading it."""
    if shutil.which("dvc") is None:
        pytest.skip("dvc is not installed")
    from spanft.data.registry import TASKS
    from spanft.model.build import BackboneConfig, make_backbone

    outside = tmp_path / "outside"
    wiki = outside / "wikitext" / "wiki.train.tokens"
    wiki.parent.mkdir(parents=True)
    wiki.write_text(" = Blorp = \n\n The frim sang to the blorp .\n The blorp sang back .\n", encoding="utf-8")
    data = outside / "data"
    for task, folder in REDUCED["tasks"].items():  # the official layout: every task's folder, a dep of its stage
        (data / folder).mkdir(parents=True)
        spec = TASKS[task]
        for split in spec.required_splits:  # check-params wants each split's file by its official name
            (data / folder / spec.splits[split].local_names[0]).write_text("x\n", encoding="utf-8")
    cola = data / "glue_data" / "CoLA"
    (cola / "train.tsv").write_text("zq01\t1\t\tThe blorp sang .\nzq01\t0\t*\tSang the the blorp .\n", encoding="utf-8")
    (cola / "dev.tsv").write_text("zq02\t1\t\tA frim ran .\n", encoding="utf-8")
    model = outside / "model"
    make_backbone(wiki, model, BackboneConfig(vocab_size=40, hidden=8, layers=1, heads=2, intermediate=16, max_len=32,
                                              mlm_steps=0))
    params = reduced_params()
    params["corpus"].update(source="local", local_path=str(wiki))
    params["data"].update(source="local", dir=str(data))
    params["chunker"]["source"] = "nltk"  # real data needs a real tagger; its stage is not run here
    params["backbones"]["local"] = {"mine": {"path": str(model)}}
    project = new_project(tmp_path / "project", params)
    stages = ("corpus", "copy_backbone@mine", "prepare_task@cola")
    dvc(project, "repro", "--single-item", "check_params", *stages)
    before = _statuses(project)
    assert set(stages) & set(before) == set()
    for path, readers in ((wiki, {"corpus"}), (cola / "dev.tsv", {"prepare_task@cola"}),
                          (model / "config.json", {"copy_backbone@mine"})):
        original = path.read_bytes()
        path.write_bytes(original + b"\n")
        after = _statuses(project)
        assert {name for name in set(before) | set(after) if before.get(name) != after.get(name)} == readers, path
        path.write_bytes(original)
        assert _statuses(project) == before


def test_the_lock_holds_only_stages_of_the_graph(tmp_path):
    """DVC keeps lock entries of stages that left dvc.yaml; they only slow every stage's lock update."""
    if shutil.which("dvc") is None:
        pytest.skip("dvc is not installed")
    # the committed lock against the committed graph: a user's `spanft profile small` changes the graph (and
    # their own repro the lock) in the working tree
    head = tmp_path / "head"
    head.mkdir()
    for name in ("dvc.yaml", "params.yaml", ".dvcignore", ".dvc/config"):
        (head / name).parent.mkdir(parents=True, exist_ok=True)
        (head / name).write_text(committed(ROOT, name), encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=head, check=True)
    names = set(dvc(head, "stage", "list", "--name-only").stdout.split())
    locked = set(yaml.safe_load(committed(ROOT, "dvc.lock"))["stages"])
    assert locked - names == set()


def test_what_tools_write_inside_code_deps_is_ignored_and_nothing_of_ours_is():
    """Bytecode, tool caches and editor files inside a code dep folder would make every stage look modified;
    no tracked source and no stage output may be ignored."""
    if shutil.which("dvc") is None:
        pytest.skip("dvc is not installed")
    litter = ["src/spanft/text/__pycache__/words.cpython-311.pyc", "src/spanft/data/.ruff_cache/0.1/x",
              "src/spanft/model/.mypy_cache/x.json", "src/spanft/.pytest_cache/v/x", "src/spanft/train/.x.py.swp",
              "src/spanft/train/x.py~", "src/spanft/.#warm.py", "src/spanft/report/.DS_Store",
              "src/spanft/._warm.py", "pipeline/.ipynb_checkpoints/x-checkpoint.py", "src/spanft.egg-info/PKG-INFO"]
    tracked = subprocess.run(["git", "ls-files", "src", "pipeline"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    lock = yaml.safe_load(committed(ROOT, "dvc.lock"))["stages"]
    outs = sorted({out["path"] for stage in lock.values() for out in stage.get("outs", [])})
    assert tracked and outs
    shown = dvc(ROOT, "check-ignore", "--non-matching", "--details", *litter, *tracked, *outs, check=False).stdout
    unmatched = {line.split("\t", 1)[1] for line in shown.splitlines() if line.startswith("::\t")}
    assert unmatched == set(tracked) | set(outs)
