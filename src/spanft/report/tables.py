"""Tables 1-8 of the paper from the fine-tuning runs, the paper's own numbers beside them, and a verdict each.

Scores are shown in percent (metric x 100), one decimal, as the paper prints them; "mean ± sd" is the mean
and the sample standard deviation (ddof = 1) over seeds (the sd is left out with a single seed). The CSVs
hold the same numbers unrounded (6 decimals) with one row per cell.

Like with like: our runs are scored on dev. A paper number is labelled with its split; a difference
"ours − paper" is shown only where the splits match (the dev and test columns of Tables 5-8, Table 6's dev
average). GLUE averages are shown two ways: ours (one column per task, MNLI matched) and the paper's rule
(nine columns: MNLI-m and MNLI-mm separately, no WNLI). Each table ends with the paper's table as printed
and footnotes on its inconsistencies (:mod:`spanft.report.paper`), and with verdict lines
(:mod:`spanft.report.verdict`) computed from the runs' predictions (:mod:`spanft.report.compare`).

This module lists the tables in order and appends the paper's table to each; the builders are
:mod:`spanft.report.glue_tables` (1, 4, 6), :mod:`spanft.report.significance_tables` (2, 3) and
:mod:`spanft.report.dev_test_tables` (5, 7, 8), on a shared :class:`~spanft.report.context.ReportContext`;
the cells and rendering are :mod:`spanft.report.cells`, which runs are which rows :mod:`spanft.report.methods`.
"""

from __future__ import annotations

from typing import Callable

from spanft.report import dev_test_tables, glue_tables, significance_tables
from spanft.report.cells import NO_VALUE, Table, has_dash
from spanft.report.context import ReportContext
from spanft.report.paper import Paper, footnotes, printed_table, split_words

BUILDERS: tuple[Callable[[ReportContext], Table], ...] = (
    glue_tables.table1, significance_tables.table2, significance_tables.table3, glue_tables.table4,
    dev_test_tables.table5, glue_tables.table6, dev_test_tables.table7, dev_test_tables.table8,
)


def all_tables(context: ReportContext) -> list[Table]:
    """Tables 1-8, each followed by the paper's table as printed."""
    return [with_paper(build(context), context.paper) for build in BUILDERS]


def with_paper(table: Table, paper: Paper) -> Table:
    """``table`` with the paper's table of the same number, its split and its footnotes appended."""
    paper_table = paper.table(table.number)
    if paper_table is not None:
        split = " and ".join(split_words(s, paper_table.is_glue) for s in paper_table.splits)
        table.paper_heading = f"The paper's Table {table.number} as printed — {paper_table.caption}. Split: {split}."
        table.paper_display = printed_table(paper_table)
        table.paper_notes = footnotes(paper, table.number)
        if has_dash(table.paper_display) and NO_VALUE not in table.notes:
            table.notes.append(NO_VALUE)
    return table
