"""Write params files in the style DVC's YAML round trip keeps, so that ``dvc exp run -S key=value`` changes
only the lines of that value (README "Experiments").

``dvc exp run -S`` loads params.yaml with ruamel's round trip, applies the override and dumps the whole file
back: a flow list (``[1, 2]``) comes back as a block list, a flow mapping longer than 80 columns is wrapped,
aligned flow mappings lose their padding. This rewrites each file through that very round trip (DVC's own
``apply_overrides`` with a no-op override), after turning the hyper-parameter blocks into block mappings, so that
the file is a fixed point of it. Comments and values are kept (checked here).

    python scripts/dvc_style_params.py profiles/*.yaml params.yaml [--check]
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
from pathlib import Path

from dvc.utils.hydra import apply_overrides
from dvc.utils.serialize._yaml import _get_yaml
from ruamel.yaml import YAML

from spanft.params.load import load_params


def dvc_style(text: str, profile: str) -> str:
    """``text`` as a fixed point of DVC's round trip (hparams blocks as block mappings)."""
    tree = YAML().load(text)
    for block in tree.get("hparams", {}).values():
        block.fa.set_block_style()
    buffer = io.StringIO()
    _get_yaml().dump(tree, buffer)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "params.yaml"
        path.write_text(buffer.getvalue(), encoding="utf-8")
        for _ in range(2):  # the first pass moves what a flow list carried; the second must change nothing
            apply_overrides(path, [f"profile={profile}"])
        return path.read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="only say which files are not in DVC's style (exit 1)")
    args = parser.parse_args(argv)
    stale = []
    for path in args.files:
        text = path.read_text(encoding="utf-8")
        styled = dvc_style(text, str(load_params(path)["profile"]))
        if [line for line in text.splitlines() if "#" in line] != [line for line in styled.splitlines() if "#" in line] \
                and not args.check:
            print(f"{path}: note: comment lines moved; read the result")
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
            handle.write(styled)
        if load_params(Path(handle.name)) != load_params(path):
            raise SystemExit(f"{path}: the round trip changed a value; left as it was")
        if styled != text:
            stale.append(path)
        if styled != text and not args.check:
            shutil.move(handle.name, path)
        else:
            Path(handle.name).unlink()
    print("\n".join(f"{path}: {'not in DVC style' if args.check else 'rewritten'}" for path in stale) or "all in DVC style")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
