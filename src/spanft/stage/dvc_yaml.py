"""``dvc.yaml``'s fine-tuning section, generated from the variant table (``spanft dvc-yaml`` writes it).

The section between the two marker lines is this module's output and nothing else; ``tests/test_plan.py``
holds ``dvc.yaml`` equal to it, so a variant added to :data:`spanft.params.plan.VARIANTS` is one
``spanft dvc-yaml`` away from its stages. Each group is a matrix over the study's params lists, so DVC
itself expands the studies of ``params.yaml`` (``dvc exp run -S`` works), and every group runs the same
fixed command: ``pipeline/finetune.py`` finds its run from the stage's name.
"""

from __future__ import annotations

from pathlib import Path

from spanft.errors import SpanftError
from spanft.fileio import atomic_open
from spanft.params.plan import AXIS_PARAMS, VARIANTS, Variant
from spanft.params.schema import FIXED_TASKS
from spanft.stage.records import record_path

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


def _split(text: str, path: Path) -> tuple[str, str, str]:
    """``text`` (``\n`` line ends) as the lines before the section, the section (markers included), the rest."""
    lines = text.splitlines(keepends=True)
    begins = [n for n, line in enumerate(lines) if line.rstrip() == BEGIN.rstrip()]
    ends = [n for n, line in enumerate(lines) if line.rstrip() == END.rstrip()]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise SpanftError(f"{path}: expected one fine-tuning section between the marker lines '# >>> fine-tuning "
                          f"groups ...' and '# <<< fine-tuning groups' (found {len(begins)} and {len(ends)})")
    begin, end = begins[0], ends[0] + 1
    return "".join(lines[:begin]), "".join(lines[begin:end]), "".join(lines[end:])


def _read(path: Path) -> tuple[str, str]:
    """The file's text with ``\n`` line ends, and the line end it uses (``\r\n`` or ``\n``)."""
    try:
        raw = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpanftError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    newline = "\r\n" if "\r\n" in raw else "\n"
    return raw.replace("\r\n", "\n"), newline


def section_in(path: str | Path) -> str:
    """The fine-tuning section as ``dvc.yaml`` holds it now."""
    path = Path(path)
    return _split(_read(path)[0], path)[1]


def write_finetune_section(path: str | Path) -> bool:
    """Rewrite ``dvc.yaml``'s fine-tuning section from the variant table, the rest of the file and its line
    ends as they are; whether anything changed."""
    path = Path(path)
    text, newline = _read(path)
    head, section, tail = _split(text, path)
    if section == finetune_section():
        return False
    with atomic_open(path, "wb") as handle:
        handle.write((head + finetune_section() + tail).replace("\n", newline).encode("utf-8"))
    return True
