"""The paper's numbers in src/spanft/report/paper_values.yaml against a second, independent transcription.

TRANSCRIPTION is typed here from the paper's printed tables (the project's PAPER-TABLES.md, not from the YAML the
code reads), one printed row per string in the printed order, "-" where the paper prints nothing. CHECKSUMS are
the sums of each printed row's numbers in thousandths, taken from the printed rows on their own: a typo in the
transcription breaks its checksum, a typo in the YAML breaks the comparison.
"""

from __future__ import annotations

import math

import pytest

from spanft.report.paper import Paper

TABLE1_COLUMNS = ["cola", "sst2", "mnli-m", "mnli-mm", "qnli", "rte", "mrpc", "qqp", "stsb", "avg", "gain"]
TABLE4_COLUMNS = TABLE1_COLUMNS[:-1]

TRANSCRIPTION = {
    1: [("BERT-base", "literature", "52.1 93.5 84.6 83.4 - 66.4 88.9 71.2 87.1 78.3 -"),
        ("BERT-large", "literature", "60.5 94.9 86.7 85.9 92.7 70.1 89.3 72.1 87.6 80.5 -"),
        ("BERT-1seq (SpanBERT's baseline)", "literature", "63.5 94.8 88.0 87.4 93.0 72.1 91.2 72.1 89.0 83.5 -"),
        ("SpanBERT", "literature", "64.3 94.8 88.1 87.7 94.3 79.0 90.9 71.9 89.9 84.5 1.0"),
        ("BERT-base", "paper", "51.4 92.1 84.4 83.5 90.3 67.1 88.3 71.3 85.1 79.3 -"),
        ("BERT-base + SF", "paper", "55.1 93.6 84.8 84.3 90.6 69.6 88.7 71.9 86.5 80.4 1.1"),
        ("BERT-large-WWM", "paper", "61.1 93.6 87.1 86.5 93.9 77.3 90.0 71.9 88.1 83.3 -"),
        ("BERT-large-WWM + SF", "paper", "62.9 94.1 87.6 87.0 94.3 81.4 91.1 72.4 89.1 84.4 1.1")],
    2: [("BERT-base vs BERT-base + SF", "paper", "0.005 0.012 0.023 0.009 0.008 0.031")],  # cola sst2 qnli rte mrpc qqp
    4: [("SpanBERT-large", "paper", "64.3 94.8 88.1 87.7 94.3 79.0 90.9 89.5 89.9 86.5"),
        ("SpanBERT-large + SF", "paper", "65.9 95.1 88.4 88.1 94.3 83.3 92.1 90.9 90.1 87.6"),
        ("RoBERTa-large", "paper", "68.0 96.4 90.2 90.2 94.7 86.6 90.9 92.2 92.4 89.0"),
        ("RoBERTa-large + SF", "paper", "68.9 96.1 90.3 90.2 94.3 90.6 92.8 92.2 92.4 89.8")],
    5: [("BERT-large-WWM", "paper", "92.0 91.4"), ("BERT-large-WWM + SF", "paper", "92.3 91.7"),
        ("SemBERT-WWM", "literature", "92.2 91.9")],  # dev test
    6: [("BERT-base", "paper", "82.6"), ("+ CNN", "paper", "82.5"), ("+ random SF", "paper", "83.0"),
        ("+ NLTK SF", "paper", "83.7"), ("+ SF", "paper", "84.2")],
    7: [("CNN-Max", "paper", "90.9 90.9"), ("CNN-CNN", "paper", "91.3 91.1"), ("Attention-Max", "paper", "90.7 90.5"),
        ("Attention-Attention", "paper", "90.8 90.8")],
}
# Table 8 as printed: a row per split, a column per backbone and method
TABLE8 = {"dev": "91.7 92.1 92.3 92.5", "test": "95.7 96.2 96.5 96.8"}
TABLE8_ROWS = ["BERT-base", "BERT-base + SF", "BERT-large", "BERT-large + SF"]
# Table 3 and the text: pre-training 32 days on 32 V100s; span fine-tuning 12 hours at most on 2 Titan RTX;
# extra parameters 3% of the backbone's
TABLE3 = {"pre-training (SpanBERT)": {"days": 32, "gpus": 32}, "span fine-tuning": {"hours_max": 12, "gpus": 2},
          "span fine-tuning, extra parameters (text)": {"extra_parameters_percent": 3}}

# sums of each printed row's numbers, in thousandths
CHECKSUMS = {1: [705500, 820300, 834600, 846400, 792800, 806600, 832800, 845400], 2: [88],
             4: [865000, 875800, 890600, 897600], 5: [183400, 184000, 184100],
             6: [82600, 82500, 83000, 83700, 84200], 7: [181800, 182400, 181200, 181600], 8: [368600, 385200]}


def numbers(text: str) -> list[float | None]:
    return [None if cell == "-" else float(cell) for cell in text.split()]


def checksum(values: list[float | None]) -> int:
    return sum(round(1000 * v) for v in values if v is not None)


def test_the_transcription_matches_the_printed_checksums():
    for table, rows in TRANSCRIPTION.items():
        assert [checksum(numbers(text)) for _, _, text in rows] == CHECKSUMS[table], table
    assert [checksum(numbers(TABLE8[split])) for split in ("dev", "test")] == CHECKSUMS[8]


@pytest.fixture(scope="module")
def paper() -> Paper:
    return Paper.load()


def _columns(table: int, paper: Paper) -> list[str]:
    return {1: TABLE1_COLUMNS, 2: ["cola", "sst2", "qnli", "rte", "mrpc", "qqp"], 4: TABLE4_COLUMNS,
            5: ["dev", "test"], 6: ["avg"], 7: ["dev", "test"]}[table]


@pytest.mark.parametrize("table", sorted(TRANSCRIPTION))
def test_the_yaml_equals_the_second_transcription(paper, table):
    printed = paper.table(table).rows
    assert [(row.label, row.origin) for row in printed] == [(label, origin) for label, origin, _ in
                                                              TRANSCRIPTION[table]]
    for row, (_, _, text) in zip(printed, TRANSCRIPTION[table]):
        expected = dict(zip(_columns(table, paper), numbers(text)))
        for column, value in expected.items():
            got = row.value(column)
            if value is None:
                assert math.isnan(got), (table, row.label, column)
            else:
                assert got == pytest.approx(value, abs=1e-9), (table, row.label, column)
        listed = {key for key, v in row.values.items() if v is not None}
        assert listed == {key for key, v in expected.items() if v is not None}, (table, row.label)


def test_table8_and_table3_equal_the_second_transcription(paper):
    rows = paper.table(8).rows
    assert [row.label for row in rows] == TABLE8_ROWS
    for split, text in TABLE8.items():
        assert [row.value(split) for row in rows] == pytest.approx(numbers(text))
    table3 = {row.label: {k: v for k, v in row.values.items() if v is not None} for row in paper.table(3).rows}
    assert table3 == TABLE3


def test_every_paper_table_is_covered():
    assert sorted([*TRANSCRIPTION, 3, 8]) == list(range(1, 9))
