"""An embedded fine-tuning recipe that learns: a small synthetic run with the embedded profile's hyper-parameters
must not end as a constant predictor, nor at the score of one.

The backbone has the embedded profile's shape but no MLM pre-training and a vocabulary learned from the task's
own text (seconds to build); the task data is the profile's synthetic stand-in at a reduced size. The hparams
block (lr, batch size, epochs, lengths) is the profile's own, so a recipe that collapses to one class, or barely
leaves chance, fails here. Pair tasks (MRPC, QQP) are not covered: at this size and without MLM they stay at a
constant's score under every recipe tried, so they say nothing here (the committed reports check them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from spanft.data.columns import SyntheticSizes
from spanft.data.prepare import load_task, write_prepared
from spanft.data.registry import get_task
from spanft.model.build import BackboneConfig, make_backbone
from spanft.report.runs import read_run
from spanft.report.trivial import check_run
from spanft.train.finetune import run_finetune
from spanft.train.options import FinetuneOptions

PROFILE = Path(__file__).resolve().parents[1] / "profiles" / "embedded.yaml"
SIZES = SyntheticSizes(train=600, eval=200, test=1)


@pytest.fixture(scope="module")
def profile() -> dict:
    return yaml.safe_load(PROFILE.read_text(encoding="utf-8"))


def _backbone(profile: dict, corpus: Path, out: Path) -> Path:
    build = dict(profile["backbones"]["build"]["tiny"])
    shape = {key: build[key] for key in ("tokenizer", "lowercase", "hidden", "layers", "heads", "intermediate",
                                         "max_len", "seed")}
    make_backbone(corpus, out, BackboneConfig(**shape, vocab_size=2000, mlm_steps=0))
    return out


# above the constant predictor by at least (the profile scores SST-2 accuracy 0.82 and CoLA MCC 0.12 here; three
# epochs of 32 at 5e-4 cut to two scored SST-2 0.515, which this must refuse)
MARGINS = {"sst2": 0.10, "cola": 0.05}


@pytest.mark.parametrize("name", ["sst2", "cola"])
def test_embedded_baseline_is_not_a_constant_predictor(profile, tmp_path, name):
    task = get_task(name)
    data = tmp_path / "data" / name
    splits = load_task(task, "synthetic", sizes=SIZES)
    write_prepared(splits, data)
    corpus = tmp_path / "corpus.txt"
    train = splits[task.train_split]
    corpus.write_text("".join(" ".join(words) + "\n" for words in train.words_a), encoding="utf-8")
    run_dir = tmp_path / "runs" / name
    options = FinetuneOptions(task=name, backbone=str(_backbone(profile, corpus, tmp_path / "backbone")),
                              variant="baseline", data=str(data), out=str(run_dir), seed=1,
                              **profile["hparams"][name])
    run_finetune(options)
    run = read_run(run_dir, "glue", "tiny", name, "baseline", 1)
    check = check_run(run, task.selection_split, task.main_metric)
    assert not check.flagged, check.describe()
    assert check.score >= check.trivial + MARGINS[name], f"{check.score} < {check.trivial} + {MARGINS[name]}"
