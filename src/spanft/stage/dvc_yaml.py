"""``dvc.yaml``'s fine-tuning section, generated from the variant table (``spanft dvc-yaml`` writes it).

The section between the two marker lines is this module's output and nothing else; ``tests/test_plan.py``
holds ``dvc.yaml`` equal to it, so a variant added to :data:`spanft.params.plan.VARIANTS` is one
``spanft dvc-yaml`` away from its stages. Each group is a matrix over the study's params lists, so DVC
itself expands the studies of ``params.yaml`` (``dvc exp run -S`` works), and every group runs the same
fixed command: ``pipeline/finetune.py`` finds its run from the stage's name.
"""

from __future__ import annotations

from pathlib import Path

from spanft.params.plan import AXIS_PARAMS, VARIANTS, Variant
from spanft.params.schema import FIXED_TASKS
from spanft.stage.records import record_path
from spanft.stage.textfile import (
    block_lines,
    read_user_text,
    replace_lines,
    split_lines,
    write_user_text,
)

BEGIN = "  # >>> fine-tuning groups, generated from spanft/params/plan.py by `spanft dvc-yaml`: do not edit"
END = "  # <<< fine-tuning groups"

# The code every fine-tuning stage runs (tests/test_stage_deps.py checks it against the imports).
CODE_DEPS = ("pipeline/finetune.py", "src/spanft/__init__.py", "src/spanft/errors.py", "src/spanft/english.py",
             "src/spanft/fileio.py", "src/spanft/threads.py", "src/spanft/params", "src/spanft/stage",
             "src/spanft/cost", "src/spanft/data", "src/spanft/model", "src/spanft/train")


def _matrix(variant: Variant) -> list[str]:
    study = variant.study
    tasks = FIXED_TASKS.get(study)
    axes = {"backbone": f'"${{studies.{study}.backbones}}"',
            "task": f"[{', '.join(tasks)}]" if tasks else f'"${{studies.{study}.tasks}}"',
            **{axis: f'"${{{AXIS_PARAMS[axis].format(study=study)}}}"' for axis in variant.axes},
            "seed": f'"${{studies.{study}.seeds}}"'}
    return _wrapped("    matrix: {", [f"{axis}: {values}" for axis, values in axes.items()], "}")


def _input(variant: Variant) -> str:
    """The run's input under ``data/``: through the ``input`` var where only the task varies in it."""
    if variant.input == "sweep":
        return variant.data("${item.task}", {"method": "${item.method}", "size": "${item.size}"})
    return "data/${input}/${item.task}"


def _run_name(variant: Variant) -> str:
    return variant.run_name({axis: f"${{item.{axis}}}" for axis in variant.axes})


def _group(variant: Variant, first: bool) -> list[str]:
    lines = [f"  {variant.group}:{' &finetune' if first else ''}"]
    if not first:
        lines.append("    <<: *finetune")
    if "${input}" in _input(variant):
        lines.append(f"    vars: [{{input: {variant.data('', {}).removeprefix('data/').rstrip('/')}}}]")
    lines += _matrix(variant)
    if first:
        lines += ["    cmd: python pipeline/finetune.py", '    params: ["hparams.${item.task}", threads]']
    if first or "${input}" not in _input(variant):
        deps = [*CODE_DEPS, '"data/backbones/${item.backbone}"', f'"{_input(variant)}"']
        lines += _wrapped("    deps: [", deps, "]")
    lines += _wrapped("    outs: [", [f'"data/runs/{variant.study}/${{item.backbone}}/${{item.task}}/{_run_name(variant)}'
                                        f'/seed${{item.seed}}"', f'"{_record(variant)}"'], "]")
    return lines


def _record(variant: Variant) -> str:
    """The run's params record (stage/records.py), named as DVC names the member: its matrix values joined."""
    axes = ["backbone", "task", *variant.axes, "seed"]
    return record_path(f"{variant.group}@" + "-".join(f"${{item.{axis}}}" for axis in axes))


def _wrapped(start: str, items: list[str], end: str, width: int = 124) -> list[str]:
    """A flow list over as many lines as ``width`` needs, continued under its first item."""
    lines, line = [], start
    for index, item in enumerate(items):
        piece = item + (", " if index < len(items) - 1 else end)
        if len(line) + len(piece.rstrip()) > width and line.strip() != start.strip():
            lines.append(line.rstrip())
            line = " " * len(start)
        line += piece
    return [*lines, line]


def finetune_section() -> str:
    """The fine-tuning groups of ``dvc.yaml``, markers included, one group per row of the variant table."""
    lines = [BEGIN]
    for index, variant in enumerate(VARIANTS):
        lines += _group(variant, first=index == 0)
    return "\n".join([*lines, END]) + "\n"


def _section_lines(path: Path) -> tuple[list[str], int, int, bool]:
    """The file's lines (each with its own end), the indexes of the section's two marker lines (refused in one
    line, naming them, where there are not exactly one of each in order), and whether it has a byte-order mark."""
    text, bom = read_user_text(path, "dvc.yaml")
    lines = split_lines(text)
    first, last = block_lines(lines, BEGIN, END, str(path), "fine-tuning groups")
    return lines, first, last, bom


def section_in(path: str | Path) -> str:
    """The fine-tuning section as ``dvc.yaml`` holds it now (``\n`` line ends)."""
    lines, first, last, _ = _section_lines(Path(path))
    return "".join(line.rstrip("\r\n") + "\n" for line in lines[first:last + 1])


def write_finetune_section(path: str | Path) -> bool:
    """Rewrite ``dvc.yaml``'s fine-tuning section from the variant table, the rest of the file (every line's
    end, a byte-order mark, the file's mode) as it is; whether anything changed."""
    path = Path(path)
    lines, first, last, bom = _section_lines(path)
    if "".join(line.rstrip("\r\n") + "\n" for line in lines[first:last + 1]) == finetune_section():
        return False
    body = finetune_section().removesuffix("\n").split("\n")[1:-1]  # between the marker lines
    write_user_text(path, replace_lines(lines, first, last, "\n".join(body)), bom)
    return True
