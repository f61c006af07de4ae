"""The tiny local backbone for the embedded default, and loading any backbone safely.

``make-backbone`` trains an uncased WordPiece vocabulary on the corpus with ``tokenizers``, builds a
small ``BertConfig``, optionally MLM-pretrains it for a few hundred steps with the HF ``Trainer``, and
saves a normal HF model directory (``AutoModel`` / ``AutoTokenizer.from_pretrained`` load it offline,
fast tokenizer). ``load_backbone`` is what fine-tuning uses for a local directory or a hub id.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import torch

from spanft.errors import SpanftError
from spanft.fileio import atomic_path, read_text_lines, require_file

log = logging.getLogger("spanft")

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@dataclass(frozen=True)
class BackboneConfig:
    """Size of the tiny backbone and of its MLM pre-training (params: ``backbone.*``)."""

    vocab_size: int = 8000
    hidden: int = 128
    layers: int = 2
    heads: int = 2
    intermediate: int = 512
    max_len: int = 256  # max_position_embeddings
    mlm_steps: int = 300
    mlm_batch_size: int = 32
    mlm_block_len: int = 128
    mlm_lr: float = 5e-4
    vocab_lines: int = 200_000  # corpus lines read to learn the vocabulary (0: all)
    seed: int = 0

    def validate(self) -> None:
        for key in ("vocab_size", "hidden", "layers", "heads", "intermediate", "max_len", "mlm_batch_size"):
            if getattr(self, key) <= 0:
                raise SpanftError(f"backbone {key.replace('_', '-')} must be positive, got {getattr(self, key)}")
        if self.mlm_steps < 0:
            raise SpanftError(f"backbone mlm-steps must be >= 0, got {self.mlm_steps}")
        if self.hidden % self.heads:
            raise SpanftError(f"backbone hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.vocab_size <= len(SPECIAL_TOKENS):
            raise SpanftError(f"backbone vocab-size must exceed {len(SPECIAL_TOKENS)}, got {self.vocab_size}")


def train_wordpiece(corpus: Path, vocab_size: int, max_lines: int = 0):
    """An uncased BERT WordPiece fast tokenizer trained on ``corpus`` (one paragraph a line)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertTokenizerFast

    raw = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    raw.normalizer = normalizers.BertNormalizer(lowercase=True)
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, min_frequency=2, show_progress=False
    )
    lines = _corpus_lines(corpus)
    raw.train_from_iterator(itertools.islice(lines, max_lines) if max_lines > 0 else lines, trainer=trainer)
    # The trainer numbers tokens in hash-map order (it changes from process to process); WordPiece only uses
    # membership, so renumber: special tokens first, then the rest sorted, for a byte-identical backbone.
    learned = set(raw.get_vocab()) - set(SPECIAL_TOKENS)
    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *sorted(learned)])}
    if len(vocab) <= len(SPECIAL_TOKENS):
        raise SpanftError(f"{corpus}: corpus too small to train a vocabulary")
    if len(vocab) < vocab_size:
        log.info("vocabulary has %d entries (asked for %d: the corpus has no more)", len(vocab), vocab_size)
    return BertTokenizerFast(vocab=vocab, do_lower_case=True)


def _corpus_lines(corpus: Path) -> Iterator[str]:
    for _, line in read_text_lines(corpus, "corpus"):
        if line.strip():
            yield line


def bert_config(cfg: BackboneConfig, vocab_size: int):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=cfg.hidden,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        intermediate_size=cfg.intermediate,
        max_position_embeddings=cfg.max_len,
        architectures=["BertModel"],
    )


class _BlockDataset(torch.utils.data.Dataset):
    """Corpus token ids cut into fixed blocks ``[CLS] ... [SEP]`` of ``block_len`` ids."""

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
        for ids in tokenizer(batch, add_special_tokens=False)["input_ids"]:
            buffer.extend(ids)
        while len(buffer) >= body and len(blocks) < max_blocks:
            blocks.append([tokenizer.cls_token_id, *buffer[:body], tokenizer.sep_token_id])
            del buffer[:body]
        batch.clear()

    for line in _corpus_lines(corpus):
        batch.append(line)
        if len(batch) >= 1000:
            flush()
            if len(blocks) >= max_blocks:
                break
    if batch:
        flush()
    return blocks


def mlm_pretrain(model, tokenizer, corpus: Path, cfg: BackboneConfig, workdir: Path) -> dict[str, float]:
    """Pre-train a ``BertForMaskedLM`` for ``cfg.mlm_steps`` steps with the HF Trainer."""
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
        disable_tqdm=None,
    )
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=0.15, seed=cfg.seed)
    trainer = Trainer(model=model, args=args, train_dataset=_BlockDataset(blocks), data_collator=collator)
    result = trainer.train()
    return {"mlm_train_loss": float(result.training_loss), "mlm_blocks": len(blocks)}


def make_backbone(corpus: str | os.PathLike, out: str | os.PathLike, cfg: BackboneConfig = BackboneConfig()) -> dict:
    """Build the tiny backbone from ``corpus`` into the directory ``out`` (atomically). Returns a summary."""
    from transformers import BertForMaskedLM, BertModel, set_seed

    cfg.validate()
    corpus = require_file(corpus, "corpus")
    start = time.perf_counter()
    tokenizer = train_wordpiece(corpus, cfg.vocab_size, cfg.vocab_lines)
    config = bert_config(cfg, len(tokenizer))
    set_seed(cfg.seed)
    summary: dict = {"vocab_size": len(tokenizer), **{k: v for k, v in asdict(cfg).items() if k != "vocab_size"}}
    with atomic_path(out) as tmp, tempfile.TemporaryDirectory(prefix="spanft-mlm-") as workdir:
        model = BertModel(config)  # with a pooler, so AutoModel loads without newly initialised weights
        if cfg.mlm_steps > 0:
            mlm = BertForMaskedLM(config)
            summary.update(mlm_pretrain(mlm, tokenizer, corpus, cfg, Path(workdir)))
            missing, unexpected = model.load_state_dict(mlm.bert.state_dict(), strict=False)
            assert not unexpected and all(k.startswith("pooler.") for k in missing), (missing, unexpected)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    summary["parameters"] = sum(p.numel() for p in model.parameters())
    summary["seconds"] = round(time.perf_counter() - start, 1)
    return summary


def load_backbone(name_or_dir: str):
    """``(AutoModel, fast tokenizer)`` for a local directory or a hub id, with one-line errors."""
    from transformers import AutoModel, AutoTokenizer

    path = Path(name_or_dir)
    looks_local = path.exists() or name_or_dir.startswith((".", "/", "~")) or name_or_dir.count("/") > 1
    if looks_local and not path.is_dir():
        raise SpanftError(f"backbone directory {name_or_dir} not found")
    if looks_local and not (path / "config.json").is_file():
        raise SpanftError(f"backbone directory {name_or_dir} has no config.json (not a saved HF model)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_dir)
        model = AutoModel.from_pretrained(name_or_dir)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpanftError(f"backbone {name_or_dir!r} could not be loaded (unknown id, or offline?): {first}") from None
    if not getattr(tokenizer, "is_fast", False):
        raise SpanftError(f"backbone {name_or_dir}: tokenizer {type(tokenizer).__name__} is not a fast tokenizer")
    if "ByteLevel(add_prefix_space=False" in repr(tokenizer.backend_tokenizer.pre_tokenizer):
        # Byte-level BPE (RoBERTa) needs a prefix space to encode pre-split words as it encodes running text.
        tokenizer = AutoTokenizer.from_pretrained(name_or_dir, add_prefix_space=True)
    return model, tokenizer


def backbone_is_uncased(tokenizer) -> bool:
    """True when the tokenizer folds case (then cased task data loses its case: a warning, not an error)."""
    if getattr(tokenizer, "do_lower_case", None) is not None:
        return bool(tokenizer.do_lower_case)
    return tokenizer.tokenize("A") == tokenizer.tokenize("a") and tokenizer.tokenize("Z") == tokenizer.tokenize("z")


def cli_make_backbone(args: argparse.Namespace) -> int:
    cfg = BackboneConfig(
        vocab_size=args.vocab_size,
        hidden=args.hidden,
        layers=args.layers,
        heads=args.heads,
        intermediate=args.intermediate,
        max_len=args.max_len,
        mlm_steps=args.mlm_steps,
        mlm_batch_size=args.mlm_batch_size,
        vocab_lines=args.vocab_lines,
        seed=args.seed,
    )
    summary = make_backbone(args.corpus, args.out, cfg)
    loss = f", MLM loss {summary['mlm_train_loss']:.3f}" if "mlm_train_loss" in summary else ""
    print(
        f"backbone: {args.out}: {summary['parameters']:,} parameters, vocabulary {summary['vocab_size']}, "
        f"{cfg.layers} layers x {cfg.hidden}, {cfg.mlm_steps} MLM steps{loss}, {summary['seconds']} s"
    )
    return 0
