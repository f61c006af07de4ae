"""The search grid: the one dvc command, and the best point per task read from `dvc exp show --json`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from spanft import cli
from spanft.errors import SpanftError
from spanft.report.grid import (
    PAPER_GRID,
    UNFINISHED,
    best_points,
    experiment_points,
    grid_command,
    grid_markdown,
    left_out,
)


def _rev(name: str, lr, scores: dict, epochs: int = 3) -> dict:
    """One revision as `dvc exp show --json` (DVC 3.67) writes it: params and metrics under their files."""
    return {"rev": name * 5, "name": name, "error": None, "experiments": None,
            "data": {"params": {"params.yaml": {"data": {"hparams": {"cola": {"lr": lr, "epochs": epochs},
                                                                     "mrpc": {"lr": 2e-05, "epochs": 3}}}}},
                     "metrics": {"reports/metrics.json": {"data": {"profile": "embedded", "glue": {"tiny": scores}}}}}}


def exp_show() -> list:
    base = {"cola": {"baseline": 0.30, "sf": 0.32, "diff": 0.02}, "mrpc": {"baseline": 0.80, "sf": 0.81, "diff": 0.01},
            "average": {"baseline": 0.55, "sf": 0.565, "diff": 0.015}}
    workspace = _rev("workspace", 2e-05, base)
    commit = _rev("main", 2e-05, base)
    commit["experiments"] = [
        {"name": "exp-a", "revs": [_rev("exp-a", "1e-05", {"cola": {"baseline": 0.35, "sf": 0.31}, "mrpc": base["mrpc"]})]},
        {"name": "exp-b", "revs": [_rev("exp-b", 3e-05, {"cola": {"baseline": 0.33, "sf": 0.40}, "mrpc": base["mrpc"]})]},
        {"name": "exp-c", "revs": [{**_rev("exp-c", 3e-05, {}), "error": {"msg": "failed"}}]},
    ]
    return [workspace, commit]


def test_best_point_per_task_and_variant():
    rows = {(r["task"], r["variant"]): r for r in best_points(experiment_points(exp_show()), "glue")}
    assert set(rows) == {("cola", "baseline"), ("cola", "sf"), ("mrpc", "baseline"), ("mrpc", "sf")}
    assert rows[("cola", "baseline")]["hparams"] == {"lr": 1e-05, "epochs": 3}  # the string '1e-05' read as a number
    assert rows[("cola", "baseline")]["dev_score"] == 0.35 and rows[("cola", "baseline")]["experiments"] == ["exp-a"]
    assert rows[("cola", "sf")]["hparams"]["lr"] == 3e-05 and rows[("cola", "sf")]["dev_score"] == 0.40
    assert rows[("cola", "sf")]["points"] == 3  # 2e-5 (workspace and main: one point), 1e-5, 3e-5
    # every experiment left mrpc's block alone: one point, reached by all four states
    assert rows[("mrpc", "sf")]["points"] == 1 and rows[("mrpc", "sf")]["tied"] == 0
    assert rows[("mrpc", "sf")]["experiments"] == ["workspace", "main", "exp-a", "exp-b"]


def test_ties_keep_the_first_point_and_say_so():
    show = exp_show()
    show[1]["experiments"][1]["revs"][0]["data"]["metrics"]["reports/metrics.json"]["data"]["glue"]["tiny"]["cola"] = \
        {"baseline": 0.35, "sf": 0.40}
    rows = {(r["task"], r["variant"]): r for r in best_points(experiment_points(show), "glue")}
    assert rows[("cola", "baseline")]["experiments"] == ["exp-a"] and rows[("cola", "baseline")]["tied"] == 1


def test_grid_command_is_the_papers_product():
    command = grid_command("rte")
    assert command[:4] == ["dvc", "exp", "run", "--queue"]
    settings = command[5::2]
    assert settings == ["hparams.rte.lr=1e-05,2e-05,3e-05", "hparams.rte.batch_size=16,32,48",
                        "hparams.rte.epochs=2,3,4,5", "hparams.rte.max_seq_len=128,256"]
    points = 1
    for values in PAPER_GRID.values():
        points *= len(values)
    assert points == 72


def test_cli_writes_the_report_and_errors_are_one_line(tmp_path, monkeypatch, capsys):
    saved = tmp_path / "grid.json"
    saved.write_text(json.dumps(exp_show()))
    assert cli.main(["grid-report", str(saved), "--out", str(tmp_path / "grid.md")]) == 0
    text = (tmp_path / "grid.md").read_text()
    assert "| tiny | cola | sf | 40.0 | 3 | epochs 3, lr 3e-05 | exp-b |" in text
    assert capsys.readouterr().out == text
    saved.write_text("{not json")
    assert cli.main(["grid-report", str(saved)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spanft: error: ") and "not valid JSON" in err and err.count("\n") == 1
    assert cli.main(["grid-command", "cola"]) == 0
    assert capsys.readouterr().out.startswith("dvc exp run --queue -S hparams.cola.lr=1e-05,2e-05,3e-05 ")
    assert cli.main(["grid-command", "colaa"]) == 2


def project_env() -> dict[str, str]:
    """The environment of git and DVC in a throw-away project: an anonymous author, no analytics."""
    return {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def dvc_project_runner(folder: Path) -> Callable[..., str]:
    """A command runner in ``folder`` (:func:`project_env`) that fails the test on a non-zero exit; skips the
    test without DVC."""
    if shutil.which("dvc") is None:
        pytest.skip("dvc is not installed")
    env = project_env()

    def run(*args: str) -> str:
        done = subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    return run


def test_real_dvc_experiments_are_read(tmp_path):
    # What this DVC writes: two experiments of a one-stage project whose metric follows hparams.cola.lr.
    run = dvc_project_runner(tmp_path)
    (tmp_path / "params.yaml").write_text("hparams:\n  cola: {lr: 2.0e-5, epochs: 3}\n")
    (tmp_path / "score.py").write_text(
        "import json, yaml\n"
        "lr = float(yaml.safe_load(open('params.yaml'))['hparams']['cola']['lr'])\n"
        "json.dump({'glue': {'tiny': {'cola': {'baseline': 1 - abs(lr - 1e-5) * 1e4, 'sf': 1 - abs(lr - 3e-5) * 1e4}}}},"
        " open('metrics.json', 'w'))\n")
    (tmp_path / "dvc.yaml").write_text(
        f"stages:\n  score:\n    cmd: {sys.executable} score.py\n    deps: [score.py]\n    params: [hparams.cola]\n"
        "    metrics:\n      - metrics.json:\n          cache: false\n")
    run("git", "init", "-q")
    run("dvc", "init", "-q")
    run("dvc", "repro", "-q")
    run("git", "add", "-A")
    run("git", "commit", "-qm", "base")
    for lr in ("1e-5", "3e-5"):
        run("dvc", "exp", "run", "-q", "-S", f"hparams.cola.lr={lr}")
    rows = {r["variant"]: r for r in best_points(experiment_points(json.loads(run("dvc", "exp", "show", "--json"))))}
    assert rows["baseline"]["hparams"]["lr"] == pytest.approx(1e-5) and rows["baseline"]["dev_score"] == 1.0
    assert rows["sf"]["hparams"]["lr"] == pytest.approx(3e-5) and rows["sf"]["points"] == 3


def test_not_a_list():
    with pytest.raises(SpanftError, match="expected a list"):
        experiment_points({"workspace": {}})


def _with(rev: dict, **params) -> dict:
    rev["data"]["params"]["params.yaml"]["data"].update(params)
    return rev


def test_experiments_with_other_params_are_no_grid_point_and_are_named():
    # issue 49: an experiment at another dict_size, same cola block as the workspace, must not share its point
    show = exp_show()
    for rev in (show[0], show[1], *(e["revs"][0] for e in show[1]["experiments"])):
        _with(rev, dict_size=1000)
    other = _with(_rev("exp-d", 2e-05, {"cola": {"baseline": 0.99, "sf": 0.99}, "mrpc": {"baseline": 0.9, "sf": 0.9}}),
                  dict_size=100000)
    show[1]["experiments"].append({"name": "exp-d", "revs": [other]})
    points = experiment_points(show)
    rows = {(r["task"], r["variant"]): r for r in best_points(points, "glue")}
    assert rows[("cola", "sf")]["dev_score"] == 0.40 and "exp-d" not in rows[("cola", "sf")]["experiments"]
    assert rows[("mrpc", "sf")]["experiments"] == ["workspace", "main", "exp-a", "exp-b"]  # 0.9 is exp-d's alone
    assert left_out(points, "glue") == [("exp-d", "dict_size=100000 (the grid's, as in workspace: 1000)")]
    text = grid_markdown(best_points(points, "glue"), "glue", left_out(points, "glue"))
    assert "- exp-d: dict_size=100000 (the grid's, as in workspace: 1000)" in text


def test_the_grid_is_the_largest_set_of_equal_params():
    # the workspace alone at another dict_size: the experiments' set is the grid, the workspace left out
    show = exp_show()
    _with(show[0], dict_size=5)
    points = experiment_points(show)
    assert [name for name, _ in left_out(points, "glue")] == ["workspace"]
    assert "workspace" not in best_points(points, "glue")[0]["experiments"]


def _running(show: list, name: str, lr, executor: str = "dvc-task") -> dict:
    """A running experiment as `dvc exp show --json` (DVC 3.67) lists it: its workspace now, with its new params
    and the metrics that were there before it ran (the baseline's: reports/ is committed), executor 'running'."""
    stale = show[0]["data"]["metrics"]["reports/metrics.json"]["data"]["glue"]["tiny"]
    rev = _rev(name, lr, stale)
    if executor == "workspace":
        rev["rev"] = "workspace"  # dvc exp run in the workspace: its state is the workspace's
    experiment = {"name": name, "revs": [rev], "executor": {"state": "running", "name": executor, "local": None}}
    show[1]["experiments"].append(experiment)
    return experiment


def test_a_running_experiment_is_no_grid_point_and_is_named():
    """`spanft grid-report` while `dvc queue start` runs: the running experiment's metrics are the baseline's, so
    its lr counted as a grid point with the baseline's score: one point too many, and '(tied with 1)' where no
    run tied."""
    show = exp_show()
    for experiment in show[1]["experiments"]:
        experiment["executor"] = {"state": "success", "name": "dvc-task", "local": None}
    _running(show, "exp-r", 9e-05)
    points = experiment_points(show)
    rows = best_points(points, "glue")
    assert all(9e-05 not in (r["hparams"]["lr"],) and "exp-r" not in r["experiments"] for r in rows)
    assert {(r["task"], r["variant"]): r["points"] for r in rows}[("cola", "sf")] == 3
    assert dict(left_out(points, "glue"))["exp-r"].startswith("still running")
    assert "- exp-r: still running" in grid_markdown(rows, "glue", left_out(points, "glue"))


def test_while_dvc_exp_run_runs_in_the_workspace_the_workspace_is_no_grid_point():
    show = json.loads(json.dumps(exp_show()))  # each revision its own trees, as DVC writes them
    show[0]["rev"] = "workspace"
    _with(show[0], hparams={"cola": {"lr": 9e-05, "epochs": 3}, "mrpc": {"lr": 2e-05, "epochs": 3}})  # -S applied
    _running(show, "exp-w", 9e-05, executor="workspace")
    points = experiment_points(show)
    assert {name for name, _ in left_out(points, "glue")} == {"workspace", "exp-w"}
    assert all(r["hparams"]["lr"] != 9e-05 for r in best_points(points, "glue"))


def test_equal_params_with_other_scores_are_not_merged():
    """The workspace's own `dvc repro` beside HEAD's committed reports (another machine's numbers): equal params,
    other scores. Merged, 'workspace, main' would stand beside the workspace's score alone."""
    show = json.loads(json.dumps(exp_show()))  # each revision its own trees, as DVC writes them
    show[1]["data"]["metrics"]["reports/metrics.json"]["data"]["glue"]["tiny"]["cola"] = {"baseline": 0.36, "sf": 0.3}
    rows = {(r["task"], r["variant"]): r for r in best_points(experiment_points(show), "glue")}
    baseline = rows[("cola", "baseline")]
    assert baseline["dev_score"] == 0.36 and baseline["experiments"] == ["main"] and baseline["points"] == 3
    assert baseline["others"] == [("workspace", 0.30)]
    assert "exp-a" not in baseline["experiments"]
    text = grid_markdown([baseline], "glue")
    assert "| 36.0 | 3 | epochs 3, lr 2e-05 | main; the same hyper-parameters scored otherwise in workspace (30.0) |" in text
    assert rows[("cola", "sf")]["experiments"] == ["exp-b"] and rows[("cola", "sf")]["tied"] == 0


def test_real_running_experiment_is_left_out(tmp_path):
    """What DVC lists while `dvc exp run --temp` runs: the running experiment with its new params and the
    committed metrics of the baseline; grid-report must not score its lr with them."""
    import time

    project, go = tmp_path / "p", tmp_path / "go"
    project.mkdir()
    run = dvc_project_runner(project)

    (project / "params.yaml").write_text("hparams:\n  cola: {lr: 2.0e-5, epochs: 3}\n")
    (project / "score.py").write_text(
        "import json, os, sys, time, yaml\n"
        "lr = float(yaml.safe_load(open('params.yaml'))['hparams']['cola']['lr'])\n"
        f"while lr > 5e-5 and not os.path.exists({str(go)!r}) and time.sleep(0.2) is None: pass\n"
        "json.dump({'glue': {'tiny': {'cola': {'baseline': lr * 1e4, 'sf': lr * 1e4}}}}, open('metrics.json', 'w'))\n")
    (project / "dvc.yaml").write_text(
        f"stages:\n  score:\n    cmd: {sys.executable} score.py\n    deps: [score.py]\n    params: [hparams.cola]\n"
        "    metrics:\n      - metrics.json:\n          cache: false\n")
    for command in (["git", "init", "-q"], ["dvc", "init", "-q"], ["dvc", "repro", "-q"], ["git", "add", "-A"],
                    ["git", "commit", "-qm", "base"]):
        run(*command)
    running = subprocess.Popen(["dvc", "exp", "run", "--temp", "-q", "-S", "hparams.cola.lr=9e-5"], cwd=project,
                               env=project_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        deadline, states = time.monotonic() + 120, []
        while time.monotonic() < deadline and "running" not in states:
            show = json.loads(run("dvc", "exp", "show", "--json"))
            states = [(e.get("executor") or {}).get("state") for r in show for e in r.get("experiments") or []]
            time.sleep(0.5)
        assert "running" in states, show
        points = experiment_points(show)
        rows = best_points(points, "glue")
        assert [r["hparams"]["lr"] for r in rows] == [pytest.approx(2e-5)] * 2, rows  # the baseline's alone
        assert [(r["points"], r["tied"]) for r in rows] == [(1, 0)] * 2, rows  # lr 9e-5 scored nothing yet
        assert [why for _, why in left_out(points, "glue")] == [UNFINISHED["running"]]
    finally:
        go.write_text("")
        running.wait(timeout=120)


def test_an_experiment_that_changed_several_params_is_left_out_naming_each():
    """`dvc exp run -S dict_size=... -S 'studies.glue.seeds=[1,2]'`: naming dict_size alone sends the user to
    re-run at the grid's dict_size, and the experiment is left out again for its seeds."""
    show = json.loads(json.dumps(exp_show()))
    for rev in (show[0], show[1], *(e["revs"][0] for e in show[1]["experiments"])):
        _with(rev, dict_size=1000, studies={"glue": {"seeds": [1]}})
    other = _with(_rev("exp-d", 2e-05, {"cola": {"baseline": 0.99, "sf": 0.99}}), dict_size=100000,
                  studies={"glue": {"seeds": [1, 2]}})
    show[1]["experiments"].append({"name": "exp-d", "revs": [other]})
    assert left_out(experiment_points(show), "glue") == [
        ("exp-d", "dict_size=100000 (the grid's, as in workspace: 1000); "
                  "studies.glue.seeds=[1, 2] (the grid's, as in workspace: [1])")]


@pytest.mark.parametrize("shape", [
    [1],
    [{"rev": "workspace", "experiments": 5}],
    [{"rev": "workspace", "experiments": [{"revs": "x"}]}],
    [{"rev": "workspace", "data": [1]}],
], ids=["number", "experiments-number", "revs-text", "data-list"])
def test_another_json_is_one_line(tmp_path, capsys, shape):
    """A JSON list that is not `dvc exp show --json`'s (a user's other file): one line, no traceback."""
    saved = tmp_path / "other.json"
    saved.write_text(json.dumps(shape))
    assert cli.main(["grid-report", str(saved)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spanft: error: dvc exp show --json: ") and err.count("\n") == 1, err


def test_odd_values_inside_a_revision_are_no_grid_point(tmp_path, capsys):
    """A block or scores that are no mapping (a hand-edited params file, another metrics file) are left out."""
    show = json.loads(json.dumps(exp_show()))
    show[1]["experiments"][0]["revs"][0]["data"]["params"]["params.yaml"]["data"]["hparams"]["cola"] = "1e-5"
    show[1]["experiments"][1]["revs"][0]["data"]["metrics"]["reports/metrics.json"]["data"]["glue"]["tiny"] = [1]
    show[1]["data"]["metrics"]["other.json"] = {"data": [1, 2]}
    saved = tmp_path / "grid.json"
    saved.write_text(json.dumps(show))
    assert cli.main(["grid-report", str(saved)]) == 0, capsys.readouterr().err
    assert "| tiny | cola | sf | 32.0 | 1 | epochs 3, lr 2e-05 | workspace, main |" in capsys.readouterr().out
