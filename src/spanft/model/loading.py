"""Fetching and loading backbones: from the hub or a local directory, in float32, with one-line errors.

:func:`fetch_hub_backbone` downloads a hub model and :func:`copy_local_backbone` copies a saved model directory,
each into a normal HF model directory with ``provenance.json`` (:mod:`spanft.data.provenance`: the hub id and
resolved commit, or the digest of what was copied); :func:`load_backbone` is what fine-tuning uses to read one
back (or a hub id directly). Every backbone loads in float32 (a checkpoint stored in fp16, like SpanBERT's,
included): mixed precision is the trainer's business.

A hub or local backbone may take its tokenizer from elsewhere (:class:`TokenizerChoice`: a hub id at
``tokenizer_revision``, or a local directory) and set its case folding (``lowercase``):
``SpanBERT/spanbert-large-cased`` ships only a cased ``vocab.txt``, which ``AutoTokenizer`` would lower-case;
its authors use the ``bert-large-cased`` tokenizer. A cased vocabulary behind a lower-casing tokenizer (its
capitalised pieces unreachable) is refused wherever a backbone is loaded (:func:`check_case`).

Weights: ``model.safetensors`` when the model has one, else ``pytorch_model.bin`` read by ``torch.load`` with
``weights_only=True`` (torch's restricted unpickler: tensors and plain containers, no code; transformers
requires torch >= 2.6 for it). SpanBERT's only weights are such a file. A ``.bin`` that holds anything else is
refused with one line. The hub's safetensors conversion bot is never called.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer, set_seed

from spanft.data.hub import settle_offline_mode
from spanft.data.provenance import (
    directory_digest,
    hub_commit,
    local_record,
    write_provenance,
)
from spanft.errors import SpanftError
from spanft.fileio import atomic_path, check_output
from spanft.model.files import (
    TOKENIZER_FILES,
    check_backbone_directory,
    check_local_backbone,
    check_model_files,
    first_line,
)
from spanft.params import ids


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
    source = choice.source or default
    if choice.source and ids.is_local_name(source) and not Path(source).is_dir():
        raise SpanftError(f"tokenizer directory {source} not found (tokenizer_id)")
    if not ids.is_local_name(source):
        settle_offline_mode()
    case = {} if choice.lowercase is None else {"do_lower_case": choice.lowercase}
    at = choice.revision if choice.source else revision
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, revision=at, trust_remote_code=False, **case)
    except Exception as exc:  # OSError/ValueError (missing, offline); KeyError/TypeError (a file of another shape)
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
    check_output(out, made_by="backbone")
    start = time.perf_counter()
    set_seed(seed)  # weights the checkpoint lacks (a pooler, say) are initialised the same way every time
    settle_offline_mode()
    loaded = load_tokenizer(hub_id, tokenizer, revision)
    model = _load_model(hub_id, revision)
    check_case(loaded, hub_id)
    check_vocabulary(model, loaded, hub_id)
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
    os.environ["DISABLE_SAFETENSORS_CONVERSION"] = "1"  # never ask the hub's bot to convert a .bin
    try:
        return AutoModel.from_pretrained(name, revision=revision, dtype=torch.float32, **SAFE_LOADING)
    except Exception as exc:  # OSError/ValueError (missing, offline), UnpicklingError/RuntimeError (unsafe .bin)
        _refuse_unsafe_loading(name, exc)
        raise _not_loaded("backbone", name, revision, exc) from None


def _not_loaded(what: str, name: str, revision: str | None, exc: BaseException) -> SpanftError:
    at = f" at revision {revision}" if revision else ""
    if ids.is_local_name(name):
        return SpanftError(f"{what} {name!r} could not be loaded: {first_line(exc)}")
    return SpanftError(f"{what} {name!r}{at} could not be loaded (unknown id or revision, or offline? without "
                       f"network use --source local --path DIR): {first_line(exc)}")


_TOKENIZER_EXTRA = ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "merges.txt")


def copy_local_backbone(path: str | os.PathLike, out: str | os.PathLike,
                        tokenizer: TokenizerChoice = TokenizerChoice()) -> dict:
    """Copy a saved model directory into ``out`` (atomically) once it loads as a backbone.

    ``tokenizer``: the tokenizer its authors used, replacing the directory's own in the copy (default: its own).
    """
    source, target = Path(path), Path(out)
    check_local_backbone(source)
    check_model_files(source)
    start = time.perf_counter()
    with atomic_path(target, inputs=[source], made_by="backbone") as tmp:
        # symlinks are followed: a hub cache snapshot links into blobs/ that the copy must hold itself
        shutil.copytree(source, tmp, ignore=shutil.ignore_patterns(".git"))
        if tokenizer.overridden:
            _replace_tokenizer(tmp, load_tokenizer(str(source), tokenizer))
        try:
            model, loaded = load_backbone(str(tmp), files_checked=True)  # the source's files, checked above
        except SpanftError as exc:  # name the directory the user gave, not the temporary copy
            raise SpanftError(exc.message.replace(str(tmp), str(source))) from None
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


def load_backbone(name_or_dir: str, files_checked: bool = False):
    """``(AutoModel in float32, fast tokenizer)`` for a local directory or a hub id, with one-line errors.

    ``files_checked``: the caller has run :func:`check_model_files` on these files (they are read again else)."""
    if check_backbone_directory(name_or_dir) and not files_checked:
        check_model_files(Path(name_or_dir))
    else:
        settle_offline_mode()
    tokenizer = load_tokenizer(name_or_dir, TokenizerChoice())
    model = _load_model(name_or_dir)
    check_case(tokenizer, name_or_dir)
    check_vocabulary(model, tokenizer, name_or_dir)
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
    """Case in both directions: a cased vocabulary behind a lower-casing tokenizer (its capitalised pieces
    unreachable), and an uncased vocabulary behind a tokenizer that keeps case (every capitalised word [UNK])."""
    if not backbone_is_uncased(tokenizer):
        _check_capitals_known(tokenizer, name)
        return
    capitals, words, examples = cased_pieces(tokenizer)
    if capitals and capitals >= CASED_SHARE * words:
        raise SpanftError(
            f"backbone {name}: its vocabulary is cased ({capitals} of {words} pieces hold capitals, e.g. "
            f"{', '.join(examples)}) but its tokenizer lower-cases them away: set tokenizer_id to its authors' "
            f"(bert-large-cased for SpanBERT) or lowercase: false (--tokenizer-id, --no-lowercase)")


def _check_capitals_known(tokenizer, name: str) -> None:
    """A tokenizer that keeps case over a vocabulary without one capitalised piece maps capitals to [UNK]."""
    unk = getattr(tokenizer, "unk_token", None)
    if unk is None:  # a byte-level BPE spells any character with its bytes: nothing is unknown
        return
    capitals, words, _ = cased_pieces(tokenizer)
    if capitals or not words:
        return
    unknown = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if unk in tokenizer.tokenize(ch)]
    lower_known = [ch for ch in "abcdefghijklmnopqrstuvwxyz" if unk not in tokenizer.tokenize(ch)]
    if len(unknown) == 26 and lower_known:
        raise SpanftError(
            f"backbone {name}: its vocabulary is uncased (0 of {words} pieces hold capitals) but its tokenizer "
            f"keeps case, so every capitalised word becomes {unk}: set lowercase: true (spanft backbone "
            f"--lowercase) or give it a cased tokenizer")


def check_vocabulary(model, tokenizer, name: str) -> None:
    """The tokenizer's ids must all have an embedding row (a tokenizer from another model would index past it)."""
    embeddings = model.get_input_embeddings()
    rows = getattr(embeddings, "num_embeddings", None)
    if rows is None:
        return
    ids = max([len(tokenizer), *(i + 1 for i in tokenizer.get_vocab().values())])
    if ids > rows:
        raise SpanftError(
            f"backbone {name}: its tokenizer has {ids} ids but its embedding has {rows} rows (config vocab_size "
            f"{getattr(model.config, 'vocab_size', rows)}): ids from {rows} up have no row; the tokenizer is not "
            f"this model's")


def usable_positions(model) -> int | None:
    """Tokens an input may hold: the position embeddings, less RoBERTa's ``padding_idx + 1`` offset."""
    total = getattr(model.config, "max_position_embeddings", None)
    if not isinstance(total, int) or total <= 0:
        return None
    padding = getattr(getattr(model, "embeddings", None), "padding_idx", None)
    return total - (padding + 1) if isinstance(padding, int) else total


def check_max_seq_len(model, name: str, max_seq_len: int) -> None:
    """``max_seq_len`` may not exceed the backbone's position embeddings (an IndexError mid-training else)."""
    usable = usable_positions(model)
    if usable is not None and max_seq_len > usable:
        total = model.config.max_position_embeddings
        extra = f" ({total} less the {total - usable} RoBERTa reserves)" if usable != total else ""
        raise SpanftError(
            f"backbone {name}: max_seq_len {max_seq_len} exceeds its {usable} position embeddings{extra}: set "
            f"hparams.<task>.max_seq_len (--max-seq-len) to at most {usable}")


def backbone_is_uncased(tokenizer) -> bool:
    """True when the tokenizer folds case (then cased task data loses its case: a warning, not an error)."""
    if getattr(tokenizer, "do_lower_case", None) is not None:
        return bool(tokenizer.do_lower_case)
    return tokenizer.tokenize("A") == tokenizer.tokenize("a") and tokenizer.tokenize("Z") == tokenizer.tokenize("z")
