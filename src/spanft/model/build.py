"""Building a backbone: a tiny BERT or RoBERTa from the corpus, MLM-pretrained, saved as a normal HF model directory.

:func:`make_backbone` trains a tokenizer on the corpus (:mod:`spanft.model.vocabulary`) and a small model of the
same family (``wordpiece``: a ``BertModel``; ``bpe``: a ``RobertaModel``), sized by :class:`BackboneConfig`
(params ``backbones.build.<name>``), then MLM-pretrains it for a few hundred steps with the HF ``Trainer``
(:func:`mlm_pretrain`) and saves model, tokenizer and ``provenance.json`` (the digest of what was built)
atomically. A fixed seed gives byte-identical files in any process.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import BertConfig, RobertaConfig, set_seed

from spanft.data.provenance import directory_digest, local_record, write_provenance
from spanft.errors import SpanftError
from spanft.fileio import atomic_path, check_output, require_file
from spanft.model.vocabulary import (
    BPE_SPECIAL_TOKENS,
    BYTE_ALPHABET_SIZE,
    SPECIAL_TOKENS,
    corpus_lines,
    train_byte_level_bpe,
    train_wordpiece,
)

log = logging.getLogger("spanft")

TOKENIZER_KINDS = ("wordpiece", "bpe")


@dataclass(frozen=True)
class BackboneConfig:
    """Size of a built backbone and of its MLM pre-training (params: ``backbones.<name>.*``)."""

    vocab_size: int = 8000
    hidden: int = 128
    layers: int = 2
    heads: int = 2
    intermediate: int = 512
    max_len: int = 256  # longest input in tokens (BERT: max_position_embeddings; RoBERTa: that + 2)
    mlm_steps: int = 300
    mlm_batch_size: int = 32
    mlm_block_len: int = 128
    mlm_lr: float = 5e-4
    vocab_lines: int = 200_000  # corpus lines read to learn the vocabulary (0: all)
    seed: int = 0
    tokenizer: str = "wordpiece"  # wordpiece (BERT) | bpe (byte-level, RoBERTa)
    lowercase: bool | None = None  # None: wordpiece lower-cases, bpe keeps case

    @property
    def folds_case(self) -> bool:
        return self.lowercase if self.lowercase is not None else self.tokenizer == "wordpiece"

    def validate(self) -> None:
        if self.tokenizer not in TOKENIZER_KINDS:
            raise SpanftError(f"backbone tokenizer must be one of {', '.join(TOKENIZER_KINDS)}, got {self.tokenizer!r}")
        for key in ("vocab_size", "hidden", "layers", "heads", "intermediate", "max_len", "mlm_batch_size", "mlm_lr"):
            if getattr(self, key) <= 0:
                raise SpanftError(f"backbone {key.replace('_', '-')} must be positive, got {getattr(self, key)}")
        if self.mlm_block_len < 3:
            raise SpanftError(f"backbone mlm-block-len must be >= 3 ([CLS], a token, [SEP]), got {self.mlm_block_len}")
        if self.mlm_steps < 0:
            raise SpanftError(f"backbone mlm-steps must be >= 0, got {self.mlm_steps}")
        if self.hidden % self.heads:
            raise SpanftError(f"backbone hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.tokenizer == "bpe":
            self._validate_bpe()
        elif self.vocab_size <= len(SPECIAL_TOKENS):
            raise SpanftError(f"backbone vocab-size must exceed {len(SPECIAL_TOKENS)}, got {self.vocab_size}")

    def _validate_bpe(self) -> None:
        if self.lowercase:
            raise SpanftError("backbone tokenizer bpe is cased (byte-level BPE, like RoBERTa): drop --lowercase")
        floor = len(BPE_SPECIAL_TOKENS) + BYTE_ALPHABET_SIZE
        if self.vocab_size <= floor:
            raise SpanftError(
                f"backbone vocab-size must exceed {floor} for bpe (5 special tokens + 256 bytes), got {self.vocab_size}"
            )



def bert_config(cfg: BackboneConfig, vocab_size: int):
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=cfg.hidden,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        intermediate_size=cfg.intermediate,
        max_position_embeddings=cfg.max_len,
        architectures=["BertModel"],
    )


def roberta_config(cfg: BackboneConfig, tokenizer):
    """RoBERTa numbers positions from ``pad_token_id + 1``: ``max_len`` tokens need ``max_len + 2`` positions."""
    return RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        intermediate_size=cfg.intermediate,
        max_position_embeddings=cfg.max_len + 2,
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        architectures=["RobertaModel"],
    )


def _tokenizer_and_model_classes(corpus: Path, cfg: BackboneConfig):
    """The trained tokenizer, the model config, and the (base model, masked-LM model) classes of its family."""
    # here: the modelling modules take seconds to import, which fetching or copying a backbone never needs
    from transformers import (
        BertForMaskedLM,
        BertModel,
        RobertaForMaskedLM,
        RobertaModel,
    )

    if cfg.tokenizer == "bpe":
        tokenizer = train_byte_level_bpe(corpus, cfg.vocab_size, cfg.vocab_lines)
        return tokenizer, roberta_config(cfg, tokenizer), RobertaModel, RobertaForMaskedLM
    tokenizer = train_wordpiece(corpus, cfg.vocab_size, cfg.vocab_lines, lowercase=cfg.folds_case)
    return tokenizer, bert_config(cfg, len(tokenizer)), BertModel, BertForMaskedLM


class _BlockDataset:
    """Corpus token ids cut into fixed blocks ``[CLS] ... [SEP]`` of ``block_len`` ids (a map-style dataset)."""

    def __init__(self, blocks: list[list[int]]):
        self.blocks = blocks

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        return {"input_ids": self.blocks[i]}


def mlm_blocks(corpus: Path, tokenizer, block_len: int, max_blocks: int) -> list[list[int]]:
    """Cut the corpus into up to ``max_blocks`` blocks; reads only as much of the file as needed."""
    body = block_len - 2
    blocks: list[list[int]] = []
    buffer: list[int] = []
    batch: list[str] = []

    def flush() -> None:
        for pieces in tokenizer(batch, add_special_tokens=False)["input_ids"]:
            buffer.extend(pieces)
        while len(buffer) >= body and len(blocks) < max_blocks:
            blocks.append([tokenizer.cls_token_id, *buffer[:body], tokenizer.sep_token_id])
            del buffer[:body]
        batch.clear()

    for line in corpus_lines(corpus):
        batch.append(line)
        if len(batch) >= 1000:
            flush()
            if len(blocks) >= max_blocks:
                break
    if batch:
        flush()
    return blocks


def _masked_positions_only(model):
    """The masked-LM loss with the vocabulary scored at the masked positions only (same loss, ~6x less output work).

    A tiny backbone's vocabulary projection costs more than its transformer layers; scoring every position, as
    ``BertForMaskedLM`` does, spends most of each step on the 85% of positions the loss ignores.
    """
    head = model.cls if hasattr(model, "cls") else model.lm_head  # BERT | RoBERTa

    class MaskedOnly(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask=None, labels=None, **_):
            hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            masked = labels != -100
            logits = head(hidden[masked])
            return {"loss": torch.nn.functional.cross_entropy(logits, labels[masked])}

    return MaskedOnly()


def mlm_pretrain(model, tokenizer, corpus: Path, cfg: BackboneConfig, workdir: Path) -> dict[str, float]:
    """Pre-train a masked-LM model (BERT or RoBERTa) for ``cfg.mlm_steps`` steps with the HF Trainer."""
    # here: the Trainer (accelerate) takes seconds to import, which fetching or copying a backbone never needs
    from transformers import DataCollatorForLanguageModeling, Trainer, TrainingArguments

    block_len = min(cfg.mlm_block_len, cfg.max_len)
    blocks = mlm_blocks(corpus, tokenizer, block_len, cfg.mlm_steps * cfg.mlm_batch_size)
    if not blocks:
        raise SpanftError(f"{corpus}: corpus too small for one MLM block of {block_len} tokens")
    if len(blocks) < cfg.mlm_steps * cfg.mlm_batch_size:
        log.info("MLM: the corpus gives %d blocks of %d tokens; they are repeated", len(blocks), block_len)
    args = TrainingArguments(
        output_dir=str(workdir),
        max_steps=cfg.mlm_steps,
        per_device_train_batch_size=cfg.mlm_batch_size,
        learning_rate=cfg.mlm_lr,
        weight_decay=0.01,
        warmup_steps=max(1, cfg.mlm_steps // 10),
        lr_scheduler_type="linear",
        seed=cfg.seed,
        data_seed=cfg.seed,
        save_strategy="no",
        logging_steps=max(1, cfg.mlm_steps // 10),
        report_to="none",
        dataloader_num_workers=0,
        use_cpu=not torch.cuda.is_available(),
        disable_tqdm=None if sys.stderr.isatty() else True,  # bars only on a terminal; a log gets the loss lines
    )
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=0.15, seed=cfg.seed)
    trainer = Trainer(model=_masked_positions_only(model), args=args, train_dataset=_BlockDataset(blocks), data_collator=collator)
    result = trainer.train()
    return {"mlm_train_loss": float(result.training_loss), "mlm_blocks": len(blocks)}


def make_backbone(corpus: str | os.PathLike, out: str | os.PathLike, cfg: BackboneConfig = BackboneConfig()) -> dict:
    """Build a tiny backbone from ``corpus`` into the directory ``out`` (atomically). Returns a summary."""
    cfg.validate()
    corpus = require_file(corpus, "corpus")
    check_output(out, inputs=[corpus], made_by="backbone")
    start = time.perf_counter()
    tokenizer, config, base_class, mlm_class = _tokenizer_and_model_classes(corpus, cfg)
    set_seed(cfg.seed)
    summary: dict = {"vocab_size": len(tokenizer), **{k: v for k, v in asdict(cfg).items() if k != "vocab_size"}}
    summary["lowercase"] = cfg.folds_case
    with atomic_path(out, inputs=[corpus], made_by="backbone") as tmp, \
            tempfile.TemporaryDirectory(prefix="spanft-mlm-") as workdir:
        model = base_class(config)  # with a pooler, so AutoModel loads without newly initialised weights
        if cfg.mlm_steps > 0:
            mlm = mlm_class(config)
            summary.update(mlm_pretrain(mlm, tokenizer, corpus, cfg, Path(workdir)))
            missing, unexpected = model.load_state_dict(mlm.base_model.state_dict(), strict=False)
            assert not unexpected and all(k.startswith("pooler.") for k in missing), (missing, unexpected)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        write_provenance(tmp, local_record("build", corpus, directory_digest(tmp)))
    summary["parameters"] = sum(p.numel() for p in model.parameters())
    summary["seconds"] = round(time.perf_counter() - start, 1)
    return summary
