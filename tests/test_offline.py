"""Off-line without HF_HUB_OFFLINE=1 (a cluster node): every hub loader ends in one line, at once.

The hub endpoint is a closed local port (``HF_ENDPOINT``), the hub cache is empty, and the offline variables
are unset or say "online": without spanft.data.hub each loader retried with back-off (~25 s, 23 lines).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, a connection is refused at once

LOADERS = {  # what each reads from the hub, and a word of its one-line error
    "task data": (["describe", "rte", "--source", "hf"], "without network use the official files"),
    "prepare-task": (["prepare-task", "rte", "--source", "hf", "--out", "out"], "without network use the official"),
    "corpus": (["corpus", "--source", "hf", "--out", "corpus.txt"], "without network, set corpus.source: local"),
    "model": (["backbone", "b", "--source", "hub", "--hub-id", "bert-base-uncased", "--out", "out"],
              "without network use --source local"),
    "tokenizer": (["backbone", "b", "--source", "local", "--path", "model", "--tokenizer-id", "bert-large-cased",
                   "--out", "out"], "without network use --source local"),
}
ENVIRONMENTS = {"unset": {}, "says-online": {"HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0",
                                             "TRANSFORMERS_OFFLINE": "0"}}


def _model_dir(root: Path) -> None:
    from transformers import BertConfig, BertModel, BertTokenizerFast

    BertModel(BertConfig(vocab_size=8, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                         intermediate_size=8, max_position_embeddings=16)).save_pretrained(root / "model")
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"])}
    BertTokenizerFast(vocab=vocab).save_pretrained(root / "model")


@pytest.mark.parametrize("environment", ENVIRONMENTS)
@pytest.mark.parametrize("loader", LOADERS)
def test_unreachable_hub_is_one_line_at_once(tmp_path, loader, environment):
    argv, expected = LOADERS[loader]
    if loader == "tokenizer":
        _model_dir(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE",
                                                            "TRANSFORMERS_OFFLINE")}
    env.update(ENVIRONMENTS[environment], HF_ENDPOINT=CLOSED, HF_HOME=str(tmp_path / "hf-home"),
               PYTHONPATH=str(ROOT / "src"))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "spanft.cli", *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    seconds = time.perf_counter() - start
    lines = done.stderr.strip().splitlines()
    print(f"{loader} ({environment}): exit {done.returncode}, {len(lines)} stderr lines, {seconds:.1f} s, "
          f"last: {lines[-1][:160] if lines else ''}")
    problems = [line for line in lines if not line.startswith("spanft: backbone b: source")]  # the info line
    assert done.returncode == 2 and len(problems) == 1, done.stderr[-3000:]
    assert problems[0].startswith("spanft: error:") and expected in problems[0]
    assert seconds < 20  # the retries alone took ~25 s (imports take a few seconds on 2 busy cores)
    assert not (tmp_path / "out").exists() and not (tmp_path / "corpus.txt").exists()


def test_a_reachable_hub_is_left_online(monkeypatch):
    from huggingface_hub import constants

    from spanft.data import hub

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "_reachable", lambda endpoint: True)
    assert hub.settle_offline_mode() is False and constants.HF_HUB_OFFLINE is False
    monkeypatch.setattr(hub, "_reachable", lambda endpoint: False)
    assert hub.settle_offline_mode() is True and constants.HF_HUB_OFFLINE is True
    assert os.environ["HF_HUB_OFFLINE"] == "1"  # and the processes it starts (DataLoader workers) inherit it
