"""What a saved backbone directory must hold, checked from its files alone: no torch, no transformers.

:func:`check_backbone_directory` (what is there: cheap) runs before a fine-tuning run imports either (seconds of
imports), so a missing backbone, config, tokenizer or weights file is told in a moment; :func:`check_model_files`
(what the files hold: it reads them) runs once, when :mod:`spanft.model.loading` loads or copies the backbone.
"""

from __future__ import annotations

from pathlib import Path

from spanft.errors import SpanftError, where
from spanft.params import ids

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model",
                   "spm.model", "sentencepiece.model", "tokenizer.model", "spm_char.model", "bpe.codes")  # as transformers names them
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json")  # what AutoModel reads, safely (no TF or Flax weights)


def check_backbone_directory(name_or_dir: str) -> bool:
    """Whether ``name_or_dir`` names a local directory (else a hub id); a local one must hold what
    :func:`check_local_backbone` asks."""
    if not ids.is_local_name(name_or_dir):
        return False
    check_local_backbone(name_or_dir)
    return True


def check_local_backbone(given: str | Path) -> None:
    """A saved model directory: there, a directory, with a config.json, a tokenizer and weights (named in a
    message as the user gave it)."""
    directory = Path(given)
    if not directory.exists():
        raise SpanftError(f"backbone directory {given} not found")
    if not directory.is_dir():
        raise SpanftError(f"backbone directory {given} is a file, not a directory")
    if not (directory / "config.json").is_file():
        raise SpanftError(f"backbone directory {given} has no config.json (not a saved HF model)")
    if not any((directory / name).is_file() for name in TOKENIZER_FILES):
        raise SpanftError(f"backbone directory {given} has no tokenizer (none of {', '.join(TOKENIZER_FILES)})")
    if not any((directory / name).is_file() for name in WEIGHT_FILES):
        raise SpanftError(f"backbone directory {given} has no weights (none of {', '.join(WEIGHT_FILES)})")


_JSON_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
               "added_tokens.json", "vocab.json")


def check_model_files(directory: Path) -> None:
    """Each file a backbone is loaded from is what its name says, or one line names it and what is wrong."""
    for name in _JSON_FILES:
        if (directory / name).is_file():
            _check_json_file(directory / name)
    if (directory / "tokenizer.json").is_file():
        _check_tokenizer_json(directory / "tokenizer.json")
    if (directory / "model.safetensors").is_file():
        _check_safetensors(directory / "model.safetensors")
    elif (directory / "pytorch_model.bin").is_file():
        _check_torch_zip(directory / "pytorch_model.bin")


def _check_json_file(path: Path) -> None:
    import json

    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpanftError(f"{path}: not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
    if not text.strip():
        raise SpanftError(f"{path}: empty (a JSON object expected)")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpanftError(f"{where(path, exc.lineno)}: not valid JSON ({exc.msg}, column {exc.colno})") from None
    if not isinstance(value, dict):
        raise SpanftError(f"{path}: a JSON object expected, found {type(value).__name__}")


def _check_tokenizer_json(path: Path) -> None:
    from tokenizers import Tokenizer

    try:
        Tokenizer.from_file(str(path))
    except Exception as exc:  # the Rust library's errors: one class, the reason in its text
        raise SpanftError(f"{path}: not a tokenizer file ({first_line(exc)})") from None


def _check_safetensors(path: Path) -> None:
    """The header's length, its JSON, and the tensors' extent against the file's size."""
    import json

    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            raise SpanftError(f"{path}: truncated ({size} bytes, shorter than a safetensors header's length field)")
        length = int.from_bytes(head, "little")
        if length > size - 8:
            raise SpanftError(f"{path}: truncated or not a safetensors file (its header claims {length} bytes, "
                              f"the file holds {size - 8} after the length field)")
        raw = handle.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
        ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
    except (UnicodeDecodeError, json.JSONDecodeError, TypeError, KeyError, IndexError, AttributeError):
        raise SpanftError(f"{path}: not a safetensors file (its header is not a tensor table)") from None
    data = size - 8 - length
    if ends and max(ends) > data:
        raise SpanftError(f"{path}: truncated (its header places tensors up to byte {max(ends)} of the data, the "
                          f"file holds {data}): copy or download it again")


def _check_torch_zip(path: Path) -> None:
    """``torch.save``'s zip archive: complete (its directory at the end) and every member's checksum right."""
    import zipfile

    with open(path, "rb") as handle:
        magic = handle.read(4)
    if not magic:
        raise SpanftError(f"{path}: empty (0 bytes): copy or download it again")
    if magic[:1] == b"\x80":  # torch's legacy pickle format: torch.load(weights_only=True) judges it
        return
    if magic != b"PK\x03\x04":
        raise SpanftError(f"{path}: not a torch weights file (neither torch.save's zip archive nor a pickle)")
    try:
        with zipfile.ZipFile(path) as archive:
            broken = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise SpanftError(f"{path}: truncated or damaged torch weights file ({first_line(exc)}): copy or "
                          f"download it again") from None
    if broken is not None:
        raise SpanftError(f"{path}: damaged torch weights file (member {broken} fails its checksum)")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
