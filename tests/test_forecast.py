"""The time left that learns per kind (spanft.stage.forecast), against figures computed by hand, and
benchmarks/bench_time_left.py's re-evaluation of saved session logs (--from, --log)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from spanft.stage.forecast import forecast
from spanft.stage.progress import progress_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_time_left as bench

T0 = 1_000.0  # when dvc started


def _entry(stage: str, seconds: float | None, kind: str | None = None, basis: str = "earlier") -> dict:
    entry = {"stage": stage, "runs": "yes", "seconds": seconds, "basis": basis}
    return entry | ({"kind": kind} if kind else {})


# An exp run: every stage timed before. Two segmenting stages, three fine-tuning runs, one stage of a kind none of
# whose stages has run yet, and a report of no kind
PLAN = [_entry("seg@1", 10.0, "segment"), _entry("seg@2", 10.0, "segment"), _entry("ft@1", 100.0, "finetune"),
        _entry("ft@2", 100.0, "finetune"), _entry("ft@3", 100.0, "finetune"), _entry("sub", 12.0, "submission"),
        _entry("report", 20.0)]
# seg@1 and seg@2 took twice their 10 s, ft@1 60 of its 100; 2 s of DVC's between stages; ft@2 started at 1107
EVENTS = [("start", "seg@1", 1001), ("end", "seg@1", 1021), ("start", "seg@2", 1023), ("end", "seg@2", 1043),
          ("start", "ft@1", 1045), ("end", "ft@1", 1105), ("start", "ft@2", 1107)]


def _records(plan: list[dict], events: list[tuple[str, str, float]]) -> list[dict]:
    return [{"command": ["dvc", "exp", "run"], "plan": plan},
            *({kind: stage, "at": at, **({"status": 0} if kind == "end" else {})} for kind, stage, at in events)]


def test_each_stage_ahead_goes_at_the_pace_of_its_kind_done_here():
    records = _records(PLAN, EVENTS)
    # by hand: fine-tuning pace 60 / 100; the basis's pace (every stage done) 100 / 120, for sub (no submission
    # done) and the report (no kind); DVC's gaps: 6 s over 3 stages passed, for sub, report and the last save
    kind, basis, gap = 0.6, 100 / 120, 2.0
    f = forecast(PLAN, records, 3, True, 10.0, 10.0)  # ft@2, 10 s in
    assert f.middle == pytest.approx((kind * 100 - 10) + kind * 100 + basis * 12 + basis * 20 + gap * 4)
    assert (f.low, f.high, f.fresh, f.timed, f.untimed) == (f.middle, f.middle, 0, 4, 0)  # all timed: one figure
    # one pace for every stage would have run the fine-tuning at 100 / 120 too: 200 s x (100 / 120 - 0.6) more
    assert (basis * 100 - 10) + basis * 100 + basis * 32 + gap * 4 - f.middle == pytest.approx(200 * (basis - kind))
    assert progress_of(records, T0, 1117).left == pytest.approx(f.middle)


def test_a_running_stage_that_outran_its_kind_s_pace_slows_only_its_kind():
    records = _records(PLAN, EVENTS)
    # ft@2 80 s in: past its 60 at its kind's pace, not past its 83.3 at the basis's; its kind now goes at
    # (60 + 80) / (100 + 100), and it is counted as done (0 left); sub and the report stay at 100 / 120
    f = forecast(PLAN, records, 3, True, 80.0, 80.0)
    assert f.middle == pytest.approx(0 + 0.7 * 100 + (100 / 120) * 32 + 2.0 * 4)
    # 90 s in, past both: the basis's pace takes it too, (100 + 90) / (120 + 100), and the kind (60 + 90) / 200
    f = forecast(PLAN, records, 3, True, 90.0, 90.0)
    assert f.middle == pytest.approx(0 + 0.75 * 100 + (190 / 220) * 32 + 2.0 * 4)


def test_the_range_of_never_timed_stages_comes_from_their_own_kind():
    plan = [_entry("x@1", 100.0, "a", "model"), _entry("x@2", 100.0, "a", "model"),
            _entry("y@1", 100.0, "b", "model"), _entry("y@2", 100.0, "b", "model"),
            _entry("y@3", 100.0, "b", "model")]
    # x@1 took 200 s and x@2 300 (kind a: 2 and 3 x the model); y@1 50 (kind b: 0.5); no time between stages
    events = [("start", "x@1", 1000), ("end", "x@1", 1200), ("start", "x@2", 1200), ("end", "x@2", 1500),
              ("start", "y@1", 1500), ("end", "y@1", 1550)]
    f = forecast(plan, _records(plan, events), 2, False, 0.0, 0.0)  # y@1 just ended
    # y@2 and y@3 at kind b's pace (0.5, not the basis's 550 / 300), one of it done: 1.5 x either side
    assert (f.middle, f.low, f.high) == pytest.approx((100, 2 * 50 / 1.5, 2 * 50 * 1.5))
    assert f.ranged
    events += [("start", "y@2", 1550), ("end", "y@2", 1650)]  # y@2 took 100: kind b 150 / 200
    f = forecast(plan, _records(plan, events), 3, False, 0.0, 0.0)
    # y@3 at 0.75; its range from the lowest ratio of kind b (0.5) to the highest (1.0), each past pace / 1.1 and
    # pace x 1.1
    assert (f.middle, f.low, f.high) == pytest.approx((75, 50, 100))


# ------------------------------------------------------------------------------------------- re-evaluation


def _session_log(folder: Path) -> tuple[Path, list[dict]]:
    records = _records(PLAN, EVENTS + [("end", "ft@2", 1170), ("start", "ft@3", 1172), ("end", "ft@3", 1240),
                                       ("start", "sub", 1242), ("end", "sub", 1260), ("start", "report", 1262),
                                       ("end", "report", 1290)])
    log = folder / "4242-1000000.jsonl"  # dvc's pid and its start in milliseconds: T0
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return log, records


def test_from_computes_the_stored_rows_again_and_prints_the_same_table(tmp_path, capsys):
    log, _ = _session_log(tmp_path)
    end = 1296.0  # DVC's save after the report
    rows = bench.forecasts(log, T0, end)
    assert [row["fraction"] for row in rows] == list(bench.FRACTIONS)
    assert rows[1]["actual"] == pytest.approx(end - (T0 + 0.5 * (end - T0)))
    entry = bench.case_entry(["dvc", "exp", "run"], T0 - 0.5, T0, end, log, rows)
    (tmp_path / "time_left.json").write_text(json.dumps({"quiet exp": entry}), encoding="utf-8")
    again = bench.reevaluate(tmp_path)
    assert again["quiet exp"]["rows"] == json.loads(json.dumps(rows))  # as stored: the same figures, no drift
    bench.print_case("quiet exp", ["dvc", "exp", "run"], T0 - 0.5, end, rows)
    table = capsys.readouterr().out
    assert _main(["--from", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert "again, from the logs in" in printed[0]
    # the table as the run printed it, each row with the figure the run printed beside it
    assert [line.split(" (when run:")[0] for line in printed[1:]] == table.splitlines()
    assert sum(" (when run: " in line for line in printed) == len(rows)


def test_log_takes_dvc_s_start_from_the_log_s_name_and_the_end_from_its_last_record(tmp_path, capsys):
    log, records = _session_log(tmp_path)
    assert bench.log_bounds(log, None, None) == (T0, records[-1]["at"])
    assert bench.log_bounds(log, 990.0, 1300.0) == (990.0, 1300.0)
    assert _main(["--log", str(log)]) == 0
    out = capsys.readouterr().out
    bench.print_case(log.name, ["dvc", "exp", "run"], T0, records[-1]["at"], bench.forecasts(log, T0, 1290))
    assert out.splitlines()[1:] == capsys.readouterr().out.splitlines()


def test_a_results_file_without_its_logs_is_a_one_line_error(tmp_path):
    (tmp_path / "time_left-exp.json").write_text(json.dumps({"loaded exp": {"seconds": 1.0, "rows": []}}),
                                                 encoding="utf-8")
    with pytest.raises(SystemExit, match="keeps no log, start and end"):
        bench.reevaluate(tmp_path)
    with pytest.raises(SystemExit, match="no time_left.json or time_left-exp.json"):
        bench.reevaluate(tmp_path / "none")


def _main(argv: list[str]) -> int:
    saved = sys.argv
    sys.argv = ["bench_time_left.py", *argv]
    try:
        return bench.main()
    finally:
        sys.argv = saved


def test_more_fractions_of_the_way_on_request_and_a_bad_one_is_one_line(tmp_path):
    log, _ = _session_log(tmp_path)
    rows = bench.forecasts(log, T0, 1290.0, bench.fractions_of("0.5,0.75"))
    assert [row["fraction"] for row in rows] == [0.5, 0.75]
    assert rows[1]["actual"] == pytest.approx(0.25 * 290)
    with pytest.raises(SystemExit, match="between 0 and 1"):
        bench.fractions_of("0.5,1.5")
