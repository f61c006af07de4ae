"""A run's training curves, logged while it trains by DVCLive's Trainer callback (layout: :mod:`spanft.data.curves`).

The stock callback (``transformers.integrations.DVCLiveCallback``) is kept but told four things:

- **The step is the optimizer step.** The stock callback counts one step per log call (a training log and an
  evaluation log per epoch would be two steps); here both logs of an epoch share its optimizer step.
- **Only what a rerun repeats.** Wall-clock figures (runtimes, samples per second, FLOs) and the Trainer's closing
  summary are left out, and so is the TrainingArguments dump (``params.yaml``: absolute paths; the run's settings
  are in its ``metrics.json``): on CPU two runs of the same seed write the same curves.
- **A resumed run continues the curve.** DVCLive's own ``resume`` appends after the last step it wrote, so the
  logs of a run killed after an epoch's logs but before that epoch's checkpoint would be written twice. At the
  start of training the curve is rewritten from the Trainer's log history instead, which a resumed run restores
  from its checkpoint: the curve holds exactly what the checkpoint's run logged, then continues.
- **Nothing outside the curves' directory.** DVCLive's ``Live`` opens the DVC repository around the working
  directory (and runs ``dvc init`` in a git repository that has none), names an experiment, under ``dvc exp run``
  git-adds its files, and marks each step in that repository's ``.dvc/tmp`` for the VS Code extension (a file
  that parallel runs race to remove). :class:`_RunLive` does none of these, and with ``save_dvc_exp=False`` and
  ``dvcyaml=None`` it saves no experiment and writes no ``dvc.yaml``: the run's outputs are all it writes.
"""

from __future__ import annotations

from pathlib import Path

from dvclive import Live
from transformers.integrations import DVCLiveCallback

WALL_CLOCK = ("runtime", "per_second")  # suffixes of the Trainer's timing keys: they differ run to run
SKIPPED = ("step", "total_flos")


class _RunLive(Live):
    """DVCLive's logger, writing its directory and nothing else (see the module's docstring)."""

    def _init_dvc(self) -> None:
        self._dvc_file = "dvc.yaml"  # never written (dvcyaml=None); DVCLive reads the attribute

    def next_step(self) -> None:
        self.sync()  # the step stays: the callback sets the optimizer step before each log

    def end(self) -> None:
        self.sync()


class TrainingCurves(DVCLiveCallback):
    """DVCLive's Trainer callback writing one run's curves into ``directory`` (created, or emptied)."""

    def __init__(self, directory: Path):
        live = _RunLive(str(directory), save_dvc_exp=False, dvcyaml=None)
        super().__init__(live=live, log_model=False)

    def setup(self, args, state, model) -> None:
        self._initialized = True  # no params.yaml: the run's settings are in its metrics.json

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        super().on_train_begin(args, state, control, model=model, **kwargs)
        for logged in state.log_history:  # a resumed run's logs up to its checkpoint; none for a new run
            self._record(args, state, control, logged["step"], logged)

    def on_log(self, args, state, control, model=None, logs=None, **kwargs):
        self._record(args, state, control, state.global_step, logs or {})

    def _record(self, args, state, control, step: int, logs: dict) -> None:
        values = curve_values(logs)
        if values:
            self.live.step = step
            super().on_log(args, state, control, logs=values)


def curve_values(logs: dict) -> dict:
    """A Trainer log's values under the names DVCLive's callback maps to ``train/...`` and ``eval/...``: a training
    log's keys prefixed ``train_`` (its ``epoch`` kept), an evaluation's ``eval_`` keys; timings left out, and the
    closing summary (``train_runtime``, the whole run's mean loss) left out whole."""
    if "train_runtime" in logs:
        return {}
    evaluation = any(key.startswith("eval_") for key in logs)
    values = {}
    for key, value in sorted(logs.items()):  # one order, fresh or replayed (a checkpoint's history is sorted)
        if key in SKIPPED or key.endswith(WALL_CLOCK) or (evaluation and key == "epoch"):
            continue
        values[key if evaluation or key == "epoch" else f"train_{key}"] = value
    return values
