"""The backbone stage: one named backbone, built, fetched or copied as its params block says.

:func:`write_backbone` (``pipeline/backbone.py``, ``spanft backbone``) reads a ``backbones.build`` /
``.hub`` / ``.local.<name>`` block and writes a normal HF model directory (``AutoModel`` /
``AutoTokenizer.from_pretrained`` load it offline, with a fast tokenizer) holding ``provenance.json``: built
from the corpus (:mod:`spanft.model.build`), or fetched from the hub or copied from a local directory
(:mod:`spanft.model.loading`). It returns the one-line summary the stage prints.
"""

from __future__ import annotations

import os

from spanft.errors import SpanftError
from spanft.model.build import BackboneConfig, make_backbone
from spanft.model.loading import (
    TokenizerChoice,
    copy_local_backbone,
    fetch_hub_backbone,
)
from spanft.params.profiles import resolve_packaged_paths
from spanft.threads import use_threads

SOURCES = ("build", "hub", "local")


def write_backbone(name: str, source: str, spec: dict, out: str | os.PathLike, corpus: str | None = None,
                   threads: int = 0) -> str:
    """Build, fetch or copy backbone ``name`` into ``out`` as ``spec`` says; return a one-line summary.

    ``threads``: torch threads of the MLM pre-training of a built backbone (:func:`spanft.threads.thread_count`).
    """
    if source not in SOURCES:
        raise SpanftError(f"backbone {name}: unknown source {source!r}; valid sources: {', '.join(SOURCES)}")
    if source == "build":
        return _build(name, spec, out, corpus, threads)
    if source == "hub":
        if not spec.get("hub_id"):
            raise SpanftError(f"backbone {name}: source hub needs hub_id")
        summary = fetch_hub_backbone(spec["hub_id"], out, spec.get("revision"), spec.get("seed", BackboneConfig().seed),
                                     TokenizerChoice.of(spec))
        commit = f" (commit {summary['commit']})" if summary.get("commit") else ""
        revision = f"@{spec['revision']}" if spec.get("revision") else ""
        origin = f"from the hub: {spec['hub_id']}{revision}{commit}"
    else:
        if not spec.get("path"):
            raise SpanftError(f"backbone {name}: source local needs path")
        choice = TokenizerChoice.of(spec)
        if choice.source:
            choice = TokenizerChoice(resolve_packaged_paths(choice.source, f"backbone {name}"), choice.revision,
                                     choice.lowercase)
        summary = copy_local_backbone(resolve_packaged_paths(spec["path"], f"backbone {name}"), out, choice)
        origin = f"copied from {spec['path']}"
    return (f"backbone {name}: {out}: {summary['parameters']:,} parameters, vocabulary {summary['vocab_size']}, "
            f"{summary['layers']} layers x {summary['hidden']}, {origin}, {summary['seconds']} s")


def _build(name: str, spec: dict, out: str | os.PathLike, corpus: str | None, threads: int) -> str:
    if corpus is None:
        raise SpanftError(f"backbone {name}: source build needs a corpus file")
    fields = set(BackboneConfig.__dataclass_fields__)
    unknown = sorted(set(spec) - fields)
    if unknown:
        raise SpanftError(f"backbone {name}: unknown build setting {', '.join(unknown)}; valid: {', '.join(fields)}")
    cfg = BackboneConfig(**spec)
    threads = use_threads(threads)
    summary = make_backbone(corpus, out, cfg)
    loss = f", MLM loss {summary['mlm_train_loss']:.3f}" if "mlm_train_loss" in summary else ""
    casing = "uncased" if summary["lowercase"] else "cased"
    return (f"backbone {name}: {out}: {summary['parameters']:,} parameters, vocabulary {summary['vocab_size']} "
            f"({cfg.tokenizer}, {casing}), {cfg.layers} layers x {cfg.hidden}, {cfg.mlm_steps} MLM steps{loss}, "
            f"{summary['seconds']} s on {threads} thread(s)")
