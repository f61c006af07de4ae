"""``dvc plots show``: the paper's Figures 3 and 4 drawn one line per task and segmentation, with axis titles, on
a page that loads nothing from the network (``.dvc/plots/offline.html``, ``scripts/plots_page.py``)."""

from __future__ import annotations

import csv
import html.parser
import importlib.util
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / ".dvc" / "plots" / "offline.html"
BROWSER = shutil.which("chromium-headless-shell") or shutil.which("chromium")
SCORES = """backbone,task,metric,method,dict_size,score
tiny,mrpc,F1,ngram,20000,80.1
tiny,mrpc,F1,ngram,100000,76.6
tiny,mrpc,F1,random,20000,77.8
tiny,mrpc,F1,random,100000,75.0
tiny,cola,MCC,ngram,20000,30.1
tiny,cola,MCC,ngram,100000,36.6
tiny,cola,MCC,random,20000,27.8
tiny,cola,MCC,random,100000,25.0
"""
SPANS = "task,dict_size,mean_spans\nmrpc,0,9.1\nmrpc,20000,6.5\ncola,0,8.0\ncola,20000,5.0\n"
CURVES = """study,backbone,task,variant,seed,run,step,epoch,train_loss,dev_loss,metric,dev_score
glue,tiny,mrpc,baseline,1,glue/tiny/mrpc/baseline/seed1,2,0.666667,0.74,,F1,
glue,tiny,mrpc,baseline,1,glue/tiny/mrpc/baseline/seed1,3,1.000000,0.70,0.66,F1,70.1
glue,tiny,mrpc,baseline,1,glue/tiny/mrpc/baseline/seed1,4,1.333333,0.65,,F1,
glue,tiny,mrpc,baseline,1,glue/tiny/mrpc/baseline/seed1,6,2.000000,0.60,0.64,F1,72.5
glue,tiny,mrpc,sf,1,glue/tiny/mrpc/sf/seed1,3,1.000000,0.68,0.65,F1,71.0
glue,tiny,mrpc,sf,1,glue/tiny/mrpc/sf/seed1,6,2.000000,0.55,0.62,F1,74.0
glue,tiny,cola,sf,2,glue/tiny/cola/sf/seed2,5,1.000000,0.61,0.60,MCC,20.0
glue,tiny,cola,sf,2,glue/tiny/cola/sf/seed2,10,2.000000,0.50,0.58,MCC,31.0
glue,tiny,cola,sf,2,glue/tiny/cola/sf/seed2,15,3.000000,0.45,0.59,MCC,33.0
"""
RUNS_DRAWN = 3  # CURVES' runs: a line each in both training plots
TRAINING_LOSS, DEV_SCORE = "Training loss by optimizer step", "Dev score by optimizer step (evaluated at each epoch's end)"


class _Loads(html.parser.HTMLParser):
    """Every URL the page's tags load: script src, link href, img/iframe src."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        wanted = {"script": "src", "link": "href", "img": "src", "iframe": "src"}.get(tag)
        self.urls += [value for name, value in attrs if name == wanted and value]


def _loads(text: str) -> list[str]:
    parser = _Loads()
    parser.feed(text)
    return parser.urls


def test_the_page_loads_nothing_and_keeps_dvcs_placeholders():
    text = PAGE.read_text(encoding="utf-8")
    assert _loads(text) == [] and "cdn." not in text.lower()
    assert "{plot_divs}" in text and "{refresh_tag}" in text and "{scripts}" not in text  # no CDN scripts added
    assert "window.vegaEmbed=" in text
    config = (ROOT / ".dvc" / "config").read_text(encoding="utf-8")
    assert re.search(r"^\[plots\]\n\s+html_template = plots/offline.html$", config, re.M)
    assert "/dvc_plots/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert [name for name, stage in stages.items() if "plots" in stage] == []  # drawn once, by the top-level plots


@pytest.mark.skipif(importlib.util.find_spec("vl_convert") is None, reason="vl-convert-python (dev extra) missing")
def test_the_page_is_the_pinned_bundle():
    done = subprocess.run([sys.executable, "scripts/plots_page.py", "--check"], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def shown(tmp_path_factory) -> Path:
    """``dvc plots show`` in a project holding the repository's plot definitions, templates and page."""
    root = tmp_path_factory.mktemp("plots")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["dvc", "init", "-q"], cwd=root, check=True)
    shutil.copytree(ROOT / ".dvc" / "plots", root / ".dvc" / "plots")
    shutil.copy(ROOT / ".dvc" / "config", root / ".dvc" / "config")
    plots = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["plots"]
    (root / "dvc.yaml").write_text(yaml.safe_dump({"plots": plots}), encoding="utf-8")
    (root / "reports/plots").mkdir(parents=True)
    (root / "reports/plots/dictsize_score.csv").write_text(SCORES, encoding="utf-8")
    (root / "reports/plots/spans_per_sentence.csv").write_text(SPANS, encoding="utf-8")
    (root / "reports/plots/training_curves.csv").write_text(CURVES, encoding="utf-8")
    done = subprocess.run(["dvc", "plots", "show", "-o", "out"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "out" / "index.html"


def _specs(page: Path) -> dict[str, dict]:
    specs = [json.loads(s) for s in re.findall(r"var spec = (\{.*?\});\s*vegaEmbed", page.read_text(), re.S)]
    return {spec["title"].split(":")[0]: spec for spec in specs}


def test_dvc_plots_show_draws_ngram_against_random_per_task(shown):
    assert _loads(shown.read_text(encoding="utf-8")) == []
    specs = _specs(shown)
    assert set(specs) == {"Figure 3", "Figure 4", TRAINING_LOSS, DEV_SCORE}  # each once
    four = specs["Figure 4"]
    assert four["encoding"]["strokeDash"]["field"] == "segmentation"
    assert four["encoding"]["color"]["field"] == "task (metric, backbone)"
    assert four["encoding"]["x"]["title"] == "dictionary size (n-grams kept)"
    assert four["encoding"]["y"]["title"] == "dev score (the task's main metric x 100)"
    values = four["data"]["values"]
    assert {(v["task"], v["method"]) for v in values} == {(t, m) for t in ("mrpc", "cola") for m in ("ngram", "random")}
    assert specs["Figure 3"]["encoding"]["color"]["field"] == "task"


@pytest.mark.skipif(BROWSER is None, reason="no headless chromium (apt-get install chromium-headless-shell)")
def test_a_headless_browser_draws_every_line_with_the_network_cut(shown):
    done = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu",
                           "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=10000", "--dump-dom",
                           shown.as_uri()], capture_output=True, text=True, timeout=120)
    dom = done.stdout
    assert done.returncode == 0 and 'class="vega-embed' in dom, done.stderr[-2000:]
    # Figure 4: task x method; Figure 3: tasks; the training plots: a line per run each
    assert dom.count('aria-roledescription="line mark"') == 2 * 2 + 2 + 2 * RUNS_DRAWN
    for label in (">n-gram (solid)<", ">random (dashed)<", ">mrpc (F1, tiny)<", ">cola (MCC, tiny)<"):
        assert label in dom, label
    assert "titled 'dictionary size (n-grams kept)'" in dom
    assert ">mrpc (F1)<" in dom and ">cola (MCC)<" in dom and ">glue tiny sf<" in dom  # panels, legend


def test_dvc_plots_show_draws_every_runs_training_curve_per_task(shown):
    specs = _specs(shown)
    rows = list(csv.DictReader(io.StringIO(CURVES)))
    for title, column, label in ((TRAINING_LOSS, "train_loss", "training loss"), (DEV_SCORE, "dev_score", "dev score")):
        spec = specs[title]
        assert spec["facet"]["field"] == "task (metric)"  # a panel per task: scores and losses differ in scale
        assert spec["resolve"]["legend"]["color"] == "independent"  # a legend per panel: its own runs only
        assert spec["resolve"]["scale"]["color"] == "independent"
        inner = spec["spec"]["encoding"]
        layers = [layer["encoding"] for layer in spec["spec"]["layer"]]
        assert inner["x"]["field"] == "step" and inner["x"]["title"] == "optimizer step"
        assert inner["y"]["field"] == column and inner["y"]["title"].startswith(label)
        assert {"field": "run", "type": "nominal"} in inner["detail"]  # one line per run
        assert layers[0]["strokeDash"]["field"] == layers[1]["shape"]["field"] == "rev"  # revisions: a dash, a mark
        drawn = spec["data"]["values"]
        assert [(v["run"], v["step"], v[column]) for v in drawn] == [(r["run"], r["step"], r[column]) for r in rows]
        # the rows a curve has no value at (the dev score between evaluations) are left out before drawing
        kept = _vega_filter(spec["transform"][0]["filter"], drawn)
        assert [(v["run"], v["step"]) for v in kept] == [(r["run"], r["step"]) for r in rows if r[column] != ""]


def _vega_filter(expression: str, values: list[dict]) -> list[dict]:
    """The rows a Vega filter expression keeps, evaluated by Vega itself (vl-convert), else skipped."""
    vl_convert = pytest.importorskip("vl_convert", reason="vl-convert-python (dev extra) missing")
    spec = {"data": {"values": values}, "transform": [{"filter": expression}], "mark": "point",
            "encoding": {"x": {"field": "step", "type": "ordinal"}, "detail": {"field": "run"}}}
    svg = vl_convert.vegalite_to_svg(spec)
    marks = re.findall(r'aria-label="step: (\d+); run: ([^"]+)"', svg)
    return [{"run": run, "step": step} for step, run in marks]


@pytest.fixture(scope="module")
def diffed(shown) -> dict:
    """``dvc plots diff HEAD`` with the training curves changed in the workspace: both revisions drawn."""
    root = shown.parents[1]
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "curves"], cwd=root, check=True)
    (root / "reports/plots/training_curves.csv").write_text(CURVES.replace(",0.70,", ",0.71,"), encoding="utf-8")
    done = subprocess.run(["dvc", "plots", "diff", "HEAD", "-o", "diff"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return _specs(root / "diff" / "index.html")


def test_dvc_plots_diff_tells_the_revisions_apart(diffed):
    spec = diffed[TRAINING_LOSS]
    assert {v["rev"] for v in spec["data"]["values"]} == {"HEAD", "workspace"}
    line, points = (layer["encoding"] for layer in spec["spec"]["layer"])
    assert line["strokeDash"] == {"field": "rev", "type": "nominal", "title": "revision"}
    assert points["shape"]["field"] == "rev"
    # the legend's marks differ: Vega draws the revision legend from the line layer (a dashed stroke per revision,
    # not the points' circles), and one colour legend per panel
    legends = _legends(spec)
    assert legends.count("revision") == 1 and legends.count("study, backbone, variant") == 2  # mrpc, cola
    symbols = _legend_symbols(spec, "revision")  # a stroke (no arc: not a circle, whose dashes do not show)
    assert len(symbols) == 2 and len({dash for _, dash in symbols}) == 2, symbols
    assert all("A" not in outline for outline, _ in symbols), symbols


def _svg(spec: dict) -> ElementTree.Element:
    vl_convert = pytest.importorskip("vl_convert", reason="vl-convert-python (dev extra) missing")
    return ElementTree.fromstring(vl_convert.vegalite_to_svg(spec))


def _legends(spec: dict) -> list[str]:
    return [g.get("aria-label").split("'")[1] for g in _svg(spec).iter()
            if (g.get("aria-label") or "").startswith("Symbol legend titled")]


def _legend_symbols(spec: dict, title: str) -> list[tuple[str, str]]:
    """The symbols of the legend titled ``title`` as drawn: each one's outline (SVG path) and dash pattern."""
    label = f"Symbol legend titled '{title}'"
    legend = next(g for g in _svg(spec).iter() if (g.get("aria-label") or "").startswith(label))
    return [(e.get("d"), e.get("stroke-dasharray")) for e in legend.iter() if e.get("stroke-dasharray")]


def test_the_readme_s_one_run_view_draws_the_optimizer_steps(shown):
    """The README's command for one run's curves, as written: x in the run's optimizer steps, not row numbers."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    command = re.search(r"`(dvc plots show [^`]*data/checkpoints/<run>/dvclive/plots/metrics)`", readme).group(1)
    root = shown.parents[1]
    metrics = root / "data/checkpoints/run/dvclive/plots/metrics/train"
    metrics.mkdir(parents=True)
    (metrics / "loss.tsv").write_text("step\tloss\n10\t0.9\n20\t0.8\n30\t0.7\n", encoding="utf-8")
    done = subprocess.run([*command.replace("<run>", "run").split(), "--json"], cwd=root, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    plot = json.loads(done.stdout)["data"]["data/checkpoints/run/dvclive/plots/metrics/train/loss.tsv"][0]
    assert [int(v["step"]) for v in plot["content"]["data"]["values"]] == [10, 20, 30]
