"""Backbones: build a tiny local one from the corpus, fetch one from the hub, or copy a local directory.

The backbone stage (:func:`write_backbone`; ``spanft backbone``) writes a normal HF model directory (``AutoModel``
/ ``AutoTokenizer.from_pretrained`` load it offline, with a fast tokenizer); ``load_backbone`` is what
fine-tuning uses to read it back (or a hub id directly). Every backbone loads in float32 (a checkpoint stored
in fp16, like SpanBERT's, included): mixed precision is the trainer's business. The directory also holds
``provenance.json`` (:mod:`spanft.data.provenance`): the hub id and resolved commit, or the digest of what was
copied or built.

A hub or local backbone may take its tokenizer from elsewhere (``tokenizer_id``: a hub id at
``tokenizer_revision``, or a local directory) and set its case folding (``lowercase``):
``SpanBERT/spanbert-large-cased`` ships only a cased ``vocab.txt``, which ``AutoTokenizer`` would lower-case;
its authors use the ``bert-large-cased`` tokenizer. A cased vocabulary behind a lower-casing tokenizer (its
capitalised pieces unreachable) is refused wherever a backbone is loaded (:func:`check_case`).

Weights: ``model.safetensors`` when the model has one, else ``pytorch_model.bin`` read by ``torch.load`` with
``weights_only=True`` (torch's restricted unpickler: tensors and plain containers, no code; transformers
requires torch >= 2.6 for it). SpanBERT's only weights are such a file. A ``.bin`` that holds anything else is
refused with one line. The hub's safetensors conversion bot is never called.

``build`` trains a tokenizer on the corpus with ``tokenizers`` and a small model of the same family:
  - ``wordpiece``: an uncased (``--no-lowercase``: cased) BERT WordPiece vocabulary and a ``BertModel``;
  - ``bpe``: a cased byte-level BPE vocabulary (``<s> <pad> </s> <unk> <mask>``, a ``RobertaTokenizerFast``
    saved with ``add_prefix_space=False`` like ``roberta-large``) and a ``RobertaModel``;
then MLM-pretrains it for a few hundred steps with the HF ``Trainer``. Neither the vocabulary nor its ids
depend on the trainer's hash-map order, so a fixed seed gives byte-identical files in any process.

This module imports neither torch nor transformers at import time.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from spanft.params import ids
from spanft.data.provenance import directory_digest, hub_commit, local_record, write_provenance
from spanft.data.hub import settle_offline_mode
from spanft.errors import SpanftError
from spanft.fileio import atomic_path, check_output, read_text_lines, require_file

log = logging.getLogger("spanft")

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
BPE_SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa's ids 0..3, mask right after
BYTE_ALPHABET_SIZE = 256
TOKENIZER_KINDS = ("wordpiece", "bpe")
SOURCES = ("build", "hub", "local")


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


def train_wordpiece(corpus: Path, vocab_size: int, max_lines: int = 0, lowercase: bool = True):
    """A BERT WordPiece fast tokenizer (uncased unless ``lowercase`` is false) trained on ``corpus``.

    The trainer numbers word-internal characters (``##x``) in hash-map order, which changes from process to
    process, and breaks ties between equally frequent merges by those numbers: the learned vocabulary itself
    varied. A first pass without merges finds those characters; declaring them (sorted) right after the
    special tokens fixes their numbers, so the second pass learns the same vocabulary in every process.
    """
    from transformers import BertTokenizerFast

    alphabet = _wordpiece_vocabulary(corpus, 0, max_lines, lowercase, SPECIAL_TOKENS)
    continuing = sorted(token for token in alphabet if token.startswith("##") and len(token) == 3)
    learned = _wordpiece_vocabulary(corpus, vocab_size, max_lines, lowercase, [*SPECIAL_TOKENS, *continuing])
    # WordPiece only uses membership: number the special tokens first, then the rest sorted.
    learned -= set(SPECIAL_TOKENS)
    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *sorted(learned)])}
    _check_vocabulary(corpus, len(vocab), len(SPECIAL_TOKENS), vocab_size)
    return BertTokenizerFast(vocab=vocab, do_lower_case=lowercase)


def _wordpiece_vocabulary(corpus: Path, vocab_size: int, max_lines: int, lowercase: bool, specials: list[str]) -> set:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    raw = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    raw.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=specials, min_frequency=2, show_progress=False
    )
    raw.train_from_iterator(_head_lines(corpus, max_lines), trainer=trainer)
    return set(raw.get_vocab())


def train_byte_level_bpe(corpus: Path, vocab_size: int, max_lines: int = 0):
    """A cased byte-level BPE ``RobertaTokenizerFast`` trained on ``corpus`` (RoBERTa's specials and layout).

    Ids: the special tokens, the 256 byte symbols sorted, then one token per merge in merge order; the merge
    ranks are the model. The trainer breaks count ties by token ids (not hash order), and the ids it hands out
    follow this order, so the vocabulary comes out the same in every process.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import RobertaTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=BPE_SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    raw.train_from_iterator(_head_lines(corpus, max_lines), trainer=trainer)
    model = json.loads(raw.to_str())["model"]
    vocab: dict[str, int] = model["vocab"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    _check_vocabulary(corpus, len(vocab), len(BPE_SPECIAL_TOKENS) + BYTE_ALPHABET_SIZE, vocab_size)
    _check_bpe_layout(vocab, merges)
    return RobertaTokenizerFast(vocab=vocab, merges=merges, add_prefix_space=False)


def _check_bpe_layout(vocab: dict[str, int], merges: list[tuple[str, str]]) -> None:
    """The trainer's ids are the canonical order described above (a guard against a change in ``tokenizers``)."""
    merged = [token for token in dict.fromkeys(a + b for a, b in merges) if token not in BPE_SPECIAL_TOKENS]
    alphabet = sorted(set(vocab) - set(BPE_SPECIAL_TOKENS) - set(merged))
    if sorted(vocab, key=vocab.get) != [*BPE_SPECIAL_TOKENS, *alphabet, *merged]:
        raise RuntimeError("tokenizers' BpeTrainer numbered its vocabulary in an unexpected order")


def _check_vocabulary(corpus: Path, size: int, floor: int, asked: int) -> None:
    """``floor``: the entries a vocabulary has before it learns anything from the corpus."""
    if size <= floor:
        raise SpanftError(f"{corpus}: corpus too small to train a vocabulary")
    if size < asked:
        log.info("vocabulary has %d entries (asked for %d: the corpus has no more)", size, asked)


def _head_lines(corpus: Path, max_lines: int) -> Iterator[str]:
    lines = _corpus_lines(corpus)
    return itertools.islice(lines, max_lines) if max_lines > 0 else lines


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


def roberta_config(cfg: BackboneConfig, tokenizer):
    """RoBERTa numbers positions from ``pad_token_id + 1``: ``max_len`` tokens need ``max_len + 2`` positions."""
    from transformers import RobertaConfig

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

    for line in _corpus_lines(corpus):
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
    import torch

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
    import torch
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
    trainer = Trainer(model=_masked_positions_only(model), args=args, train_dataset=_BlockDataset(blocks), data_collator=collator)
    result = trainer.train()
    return {"mlm_train_loss": float(result.training_loss), "mlm_blocks": len(blocks)}


def make_backbone(corpus: str | os.PathLike, out: str | os.PathLike, cfg: BackboneConfig = BackboneConfig()) -> dict:
    """Build a tiny backbone from ``corpus`` into the directory ``out`` (atomically). Returns a summary."""
    from transformers import set_seed

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


@dataclass(frozen=True)
class TokenizerChoice:
    """The tokenizer a hub or local backbone is given: its own (``source`` None) or its authors' (a hub id at
    ``revision``, or a local directory), with its case folding forced (``lowercase``) or as saved (None)."""

    source: str | None = None
    revision: str | None = None
    lowercase: bool | None = None

    @classmethod
    def of(cls, spec: dict) -> "TokenizerChoice":
        return cls(spec.get("tokenizer_id") or None, spec.get("tokenizer_revision") or None, spec.get("lowercase"))

    @property
    def overridden(self) -> bool:
        return self.source is not None or self.lowercase is not None


def load_tokenizer(default: str, choice: TokenizerChoice, revision: str | None = None):
    """The fast tokenizer ``choice`` names (``default`` at ``revision`` when it names none); one-line errors."""
    from transformers import AutoTokenizer

    source = choice.source or default
    if choice.source and ids.is_local_name(source) and not Path(source).is_dir():
        raise SpanftError(f"tokenizer directory {source} not found (tokenizer_id)")
    if not ids.is_local_name(source):
        settle_offline_mode()
    case = {} if choice.lowercase is None else {"do_lower_case": choice.lowercase}
    at = choice.revision if choice.source else revision
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, revision=at, trust_remote_code=False, **case)
    except (OSError, ValueError) as exc:
        _refuse_unsafe_loading(source, exc)
        raise _not_loaded("tokenizer" if choice.source else "backbone", source, at, exc) from None
    _require_fast(tokenizer, source)
    return tokenizer


def _tokenizer_record(tokenizer, choice: TokenizerChoice, default_commit: str | None) -> dict:
    """Which tokenizer a backbone was given: hub id and commit, or directory and digest; its case folding."""
    record = {"id": choice.source, "lowercase": backbone_is_uncased(tokenizer)}
    if choice.source is None:
        return record | {"id": "own", "revision": default_commit}
    if ids.is_local_name(choice.source):
        return record | {"digest": directory_digest(choice.source)}
    commit = getattr(tokenizer, "_commit_hash", None) or tokenizer.init_kwargs.get("_commit_hash")
    return record | {"revision": commit or hub_commit(choice.source, choice.revision, "model"),
                     "requested_revision": choice.revision}


def fetch_hub_backbone(hub_id: str, out: str | os.PathLike, revision: str | None = None, seed: int = 0,
                       tokenizer: TokenizerChoice = TokenizerChoice()) -> dict:
    """Download ``hub_id`` (model in float32 + tokenizer) and save it into the directory ``out`` (atomically).

    ``tokenizer``: the tokenizer its authors used (default: the repository's own, at ``revision``).
    """
    from transformers import set_seed

    check_output(out, made_by="backbone")
    start = time.perf_counter()
    set_seed(seed)  # weights the checkpoint lacks (a pooler, say) are initialised the same way every time
    settle_offline_mode()
    loaded = load_tokenizer(hub_id, tokenizer, revision)
    model = _load_model(hub_id, revision)
    check_case(loaded, hub_id)
    commit = getattr(model.config, "_commit_hash", None)
    record = {"source": "hub", "id_or_path": hub_id, "revision": commit, "requested_revision": revision,
              "dtype": "float32"}
    if tokenizer.overridden:
        record["tokenizer"] = _tokenizer_record(loaded, tokenizer, commit)
    with atomic_path(out, made_by="backbone") as tmp:
        model.save_pretrained(tmp)
        loaded.save_pretrained(tmp)
        write_provenance(tmp, record)
    return _loaded_summary(model, loaded, start) | {"commit": commit}


def _load_model(name: str, revision: str | None = None):
    """``AutoModel`` in float32 from a directory or hub id, safetensors or a tensors-only ``.bin``."""
    import torch
    from transformers import AutoModel

    os.environ["DISABLE_SAFETENSORS_CONVERSION"] = "1"  # never ask the hub's bot to convert a .bin
    try:
        return AutoModel.from_pretrained(name, revision=revision, dtype=torch.float32, **SAFE_LOADING)
    except Exception as exc:  # OSError/ValueError (missing, offline), UnpicklingError/RuntimeError (unsafe .bin)
        _refuse_unsafe_loading(name, exc)
        raise _not_loaded("backbone", name, revision, exc) from None


def _not_loaded(what: str, name: str, revision: str | None, exc: BaseException) -> SpanftError:
    at = f" at revision {revision}" if revision else ""
    if ids.is_local_name(name):
        return SpanftError(f"{what} {name!r} could not be loaded: {_first_line(exc)}")
    return SpanftError(f"{what} {name!r}{at} could not be loaded (unknown id or revision, or offline? without "
                       f"network use --source local --path DIR): {_first_line(exc)}")


TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model")


_TOKENIZER_EXTRA = ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "merges.txt")


def copy_local_backbone(path: str | os.PathLike, out: str | os.PathLike,
                        tokenizer: TokenizerChoice = TokenizerChoice()) -> dict:
    """Copy a saved model directory into ``out`` (atomically) once it loads as a backbone.

    ``tokenizer``: the tokenizer its authors used, replacing the directory's own in the copy (default: its own).
    """
    source, target = Path(path), Path(out)
    if not source.is_dir():
        raise SpanftError(f"backbone directory {source} not found")
    if not (source / "config.json").is_file():
        raise SpanftError(f"backbone directory {source} has no config.json (not a saved HF model)")
    if not any((source / name).is_file() for name in TOKENIZER_FILES):
        raise SpanftError(f"backbone directory {source} has no tokenizer (none of {', '.join(TOKENIZER_FILES)})")
    start = time.perf_counter()
    with atomic_path(target, inputs=[source], made_by="backbone") as tmp:
        # symlinks are followed: a hub cache snapshot links into blobs/ that the copy must hold itself
        shutil.copytree(source, tmp, ignore=shutil.ignore_patterns(".git"))
        if tokenizer.overridden:
            _replace_tokenizer(tmp, load_tokenizer(str(source), tokenizer))
        try:
            model, loaded = load_backbone(str(tmp))
        except SpanftError as exc:  # name the directory the user gave, not the temporary copy
            raise SpanftError(str(exc).replace(str(tmp), str(source))) from None
        extra = {"tokenizer": _tokenizer_record(loaded, tokenizer, None)} if tokenizer.overridden else {}
        write_provenance(tmp, local_record("local", source.resolve(), directory_digest(tmp), **extra))
    return _loaded_summary(model, loaded, start)


def _replace_tokenizer(directory: Path, tokenizer) -> None:
    """The directory's own tokenizer files out, ``tokenizer``'s in (no stale vocabulary left to load)."""
    for name in (*TOKENIZER_FILES, *_TOKENIZER_EXTRA):
        (directory / name).unlink(missing_ok=True)
    tokenizer.save_pretrained(directory)


def _require_fast(tokenizer, name: str) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise SpanftError(f"backbone {name}: tokenizer {type(tokenizer).__name__} is not a fast tokenizer")


def _loaded_summary(model, tokenizer, start: float) -> dict:
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tokenizer),
        "layers": model.config.num_hidden_layers,
        "hidden": model.config.hidden_size,
        "seconds": round(time.perf_counter() - start, 1),
    }


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# Loading a model never runs code from it: no custom modelling code; safetensors, or a .bin read by torch's
# restricted unpickler (weights_only: tensors and plain containers only, never a callable).
SAFE_LOADING = {"trust_remote_code": False, "weights_only": True}


def _refuse_unsafe_loading(name: str, exc: BaseException) -> None:
    """One line for a model that only loads by running its own code or a pickle's."""
    if "custom code" in str(exc):
        raise SpanftError(f"backbone {name!r} needs its own modelling code (trust_remote_code), which spanft "
                          f"never runs: use a model that transformers supports natively") from None
    if "weights_only" in str(exc) or "Unsupported global" in str(exc):
        raise SpanftError(
            f"backbone {name!r}: its pytorch_model.bin holds more than tensors (torch.load weights_only=True "
            f"refused it), and spanft never runs a pickle's code: use a model with model.safetensors"
        ) from None


def load_backbone(name_or_dir: str):
    """``(AutoModel in float32, fast tokenizer)`` for a local directory or a hub id, with one-line errors."""
    from transformers import AutoTokenizer

    path = Path(name_or_dir)
    looks_local = ids.is_local_name(name_or_dir)
    if looks_local and not path.is_dir():
        raise SpanftError(f"backbone directory {name_or_dir} not found")
    if looks_local and not (path / "config.json").is_file():
        raise SpanftError(f"backbone directory {name_or_dir} has no config.json (not a saved HF model)")
    if not looks_local:
        settle_offline_mode()
    tokenizer = load_tokenizer(name_or_dir, TokenizerChoice())
    model = _load_model(name_or_dir)
    check_case(tokenizer, name_or_dir)
    if "ByteLevel(add_prefix_space=False" in repr(tokenizer.backend_tokenizer.pre_tokenizer):
        # Byte-level BPE (RoBERTa) needs a prefix space to encode pre-split words as it encodes running text.
        tokenizer = AutoTokenizer.from_pretrained(name_or_dir, add_prefix_space=True, trust_remote_code=False)
    return model, tokenizer


def cased_pieces(tokenizer) -> tuple[int, int, list[str]]:
    """``(pieces with a capital A-Z, word pieces, a few examples)`` of the vocabulary, special tokens aside.

    ASCII capitals only: a byte-level BPE's byte symbols (``Ġ``, ``Ċ``) are capitals of another alphabet."""
    specials = set(tokenizer.all_special_tokens)
    words = [t for t in tokenizer.get_vocab() if t not in specials and not _bracketed(t)]
    capitals = sorted(t for t in words if any("A" <= ch <= "Z" for ch in t))
    return len(capitals), len(words), capitals[:3]


def _bracketed(token: str) -> bool:
    return (token[:1], token[-1:]) in (("[", "]"), ("<", ">"))


CASED_SHARE = 0.01  # an uncased vocabulary has no capitals at all; a cased one has them by the thousand


def check_case(tokenizer, name: str) -> None:
    """A cased vocabulary behind a lower-casing tokenizer is an error: its capitalised pieces are unreachable."""
    if not backbone_is_uncased(tokenizer):
        return
    capitals, words, examples = cased_pieces(tokenizer)
    if capitals and capitals >= CASED_SHARE * words:
        raise SpanftError(
            f"backbone {name}: its vocabulary is cased ({capitals} of {words} pieces hold capitals, e.g. "
            f"{', '.join(examples)}) but its tokenizer lower-cases, so they are never used: give it its authors' "
            f"tokenizer (tokenizer_id, e.g. bert-large-cased for SpanBERT) or lowercase: false "
            f"(spanft backbone --tokenizer-id / --no-lowercase)")


def backbone_is_uncased(tokenizer) -> bool:
    """True when the tokenizer folds case (then cased task data loses its case: a warning, not an error)."""
    if getattr(tokenizer, "do_lower_case", None) is not None:
        return bool(tokenizer.do_lower_case)
    return tokenizer.tokenize("A") == tokenizer.tokenize("a") and tokenizer.tokenize("Z") == tokenizer.tokenize("z")


# ---------------------------------------------------------------------------------------------------------
# The backbone stage: one named backbone from its params block (backbones.build / .hub / .local.<name>)

def write_backbone(name: str, source: str, spec: dict, out: str | os.PathLike, corpus: str | None = None) -> str:
    """Build, fetch or copy backbone ``name`` into ``out`` as ``spec`` says; return a one-line summary."""
    if source not in SOURCES:
        raise SpanftError(f"backbone {name}: unknown source {source!r}; valid sources: {', '.join(SOURCES)}")
    if source == "build":
        return _build(name, spec, out, corpus)
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
        from spanft.params.profiles import resolve_packaged_paths

        choice = TokenizerChoice.of(spec)
        if choice.source:
            choice = TokenizerChoice(resolve_packaged_paths(choice.source, f"backbone {name}"), choice.revision,
                                     choice.lowercase)
        summary = copy_local_backbone(resolve_packaged_paths(spec["path"], f"backbone {name}"), out, choice)
        origin = f"copied from {spec['path']}"
    return (f"backbone {name}: {out}: {summary['parameters']:,} parameters, vocabulary {summary['vocab_size']}, "
            f"{summary['layers']} layers x {summary['hidden']}, {origin}, {summary['seconds']} s")


def _build(name: str, spec: dict, out: str | os.PathLike, corpus: str | None) -> str:
    if corpus is None:
        raise SpanftError(f"backbone {name}: source build needs a corpus file")
    fields = set(BackboneConfig.__dataclass_fields__)
    unknown = sorted(set(spec) - fields)
    if unknown:
        raise SpanftError(f"backbone {name}: unknown build setting {', '.join(unknown)}; valid: {', '.join(fields)}")
    cfg = BackboneConfig(**spec)
    summary = make_backbone(corpus, out, cfg)
    loss = f", MLM loss {summary['mlm_train_loss']:.3f}" if "mlm_train_loss" in summary else ""
    casing = "uncased" if summary["lowercase"] else "cased"
    return (f"backbone {name}: {out}: {summary['parameters']:,} parameters, vocabulary {summary['vocab_size']} "
            f"({cfg.tokenizer}, {casing}), {cfg.layers} layers x {cfg.hidden}, {cfg.mlm_steps} MLM steps{loss}, "
            f"{summary['seconds']} s")
