"""Progress over the graph (spanft.stage.progress): the numbers of a stage's line from a session log, the plan's
reading of dvc's command line, and ``spanft status`` for a running session and for none."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from spanft.cli import main
from spanft.stage import progress
from spanft.stage.progress import (
    duration,
    headline_lines,
    progress_line,
    progress_of,
    stage_progress,
    status_lines,
    summary_lines,
)
from spanft.stage.session import (
    FOLDER,
    TIMES,
    Session,
    append_record,
    dvc_arguments,
    session_log,
)

T0 = 1_000.0  # when dvc started
# Five stages from the first one on: a and b changed, c downstream of them, d changed, e downstream of d; the
# seconds each took before (None: never timed)
PLAN = [{"stage": "a", "runs": "yes", "seconds": 60.0}, {"stage": "b", "runs": "yes", "seconds": 120.0},
        {"stage": "c", "runs": "maybe", "seconds": None}, {"stage": "d", "runs": "yes", "seconds": 30.0},
        {"stage": "e", "runs": "maybe", "seconds": 10.0}]


def _log(*events: tuple[str, str, float] | tuple[str, str, float, int]) -> list[dict]:
    records: list[dict] = [{"command": ["dvc", "repro"], "plan": PLAN}]
    for kind, stage, at, *status in events:
        records.append({kind: stage, "at": at, **({"status": status[0]} if kind == "end" else {})})
    return records


def test_a_stage_skipped_by_dvc_drops_out_of_the_count_and_the_estimate():
    # a ran 1010-1070; DVC skipped b (unchanged); c started at 1080; now 1100
    records = _log(("start", "a", 1010), ("end", "a", 1070, 0), ("start", "c", 1080))
    p = progress_of(records, T0, 1100)
    # k = 2 started (a, c); N = 2 + the 2 after c (d, e), "at most": e may not run; 100 s since dvc started;
    # left: d 30 + e 10 at a's pace (60 s of 60: 1), and DVC's gaps: 10 s from a's end to c's start over 2
    # planned stages (b skipped) = 5 s per stage, for d, e and the last one's save: 15; c, never timed, takes
    # the mean stage of this run (a: 60 s) less its 20 s so far
    assert (p.stage, p.running, p.number, p.total, p.at_most) == ("c", True, 2, 4, True)
    assert (p.elapsed, p.left, p.untimed, p.done) == (100, 55 + 40, 0, 1)
    assert progress_line(p) == "stage 2 of at most 4: c · 1 min 40 s in · about 1 min 35 s left"


def test_the_running_stage_counts_what_is_left_of_its_own_time():
    records = _log(("start", "a", 1010), ("end", "a", 1070, 0), ("start", "b", 1075), ("end", "b", 1190, 0),
                   ("start", "c", 1195), ("end", "c", 1300, 0), ("start", "d", 1305))
    # the pace: a and b took 175 s of their 180 (c had no time to go by); d: 10 of its 30 x pace gone, and e's
    # 10 x pace; DVC's gaps: 5 s per stage, before e and after it
    pace = 175 / 180
    p = progress_of(records, T0, 1315)
    assert (p.number, p.total, p.untimed, p.at_most) == (4, 5, 0, True)
    assert p.left == pytest.approx(30 * pace - 10 + 10 * pace + 2 * 5)
    assert progress_line(p) == "stage 4 of at most 5: d · 5 min 15 s in · about 39 s left"
    over = progress_of(records, T0, 1400)  # d past its paced time: 0 for it, and its 95 s so far slow the pace
    assert over.left == pytest.approx(10 * (175 + 95) / (180 + 30) + 2 * 5)
    last = progress_of(records + [{"end": "d", "at": 1330, "status": 0}, {"start": "e", "at": 1332}], T0, 1342.2)
    # e past its paced time: what is left is DVC's save after it, at the 17 s of gaps over 4 stages passed
    assert last.left == pytest.approx(17 / 4)
    assert progress_line(last) == "stage 5 of 5: e · 5 min 42 s in · about 4 s left"


def test_a_certain_count_has_no_at_most_and_the_end_between_stages_is_told():
    records = _log(("start", "a", 1010), ("end", "a", 1070, 0), ("start", "b", 1075), ("end", "b", 1190, 0),
                   ("start", "c", 1195), ("end", "c", 1300, 0), ("start", "d", 1305), ("end", "d", 1335, 0))
    p = progress_of(records, T0, 1340)  # between d and e; only e is left (maybe), at the pace of a, b, d
    # (205 s of 210); the gaps (5 s per stage): the one before e, of which 5 s have gone, and the one after it
    assert (p.running, p.number, p.total) == (False, 4, 5)
    assert p.left == pytest.approx(10 * 205 / 210 + 2 * 5 - 5)
    assert progress_line(p) == "stage 4 of at most 5 done: d · 5 min 40 s in · about 15 s left"
    records = [{"command": ["dvc", "repro"], "plan": [dict(entry, runs="yes") for entry in PLAN]},
               {"start": "a", "at": 1001}]
    assert progress_line(progress_of(records, T0, 1001)) == "stage 1 of 5: a · 1 s in · about 3 min 40 s left + " \
                                                            "1 stage never timed"


def test_without_a_plan_the_line_claims_no_count():
    records = [{"command": ["dvc", "repro"]}, {"start": "x", "at": 1005}]
    assert progress_line(progress_of(records, T0, 1065)) == "stage 1: x · 1 min 5 s in"
    never = [{"command": ["dvc", "repro"], "plan": [{"stage": "x", "runs": "yes", "seconds": None},
                                                    {"stage": "y", "runs": "maybe", "seconds": None}]},
             {"start": "x", "at": 1005}]
    assert progress_line(progress_of(never, T0, 1065)) == "stage 1 of at most 2: x · 1 min 5 s in · time left not " \
                                                          "known: 2 stages never timed"
    # once a stage has ended, one never timed takes this run's mean stage (x: 4 s; y is 8 s in: 0 left), and DVC's
    # gaps count (3 s, for the save after y)
    never += [{"end": "x", "at": 1009, "status": 0}, {"start": "y", "at": 1012}]
    assert progress_line(progress_of(never, T0, 1020)) == "stage 2 of 2: y · 20 s in · about 3 s left"
    stray = _log(("start", "z", 1005))  # a stage the plan does not hold: no count rather than a wrong one
    assert progress_of(stray, T0, 1010).total is None


# ------------------------------------------------------------------------------------------- a time left that learns

# A fresh clone's plan: a stage timed before, four fine-tuning runs only the cost model has a time for (100 s
# each), and a report never timed
FRESH = [{"stage": "s1", "runs": "yes", "seconds": 10.0, "basis": "earlier"},
         *({"stage": f"ft@{i}", "runs": "yes", "seconds": 100.0, "basis": "model"} for i in range(1, 5)),
         {"stage": "report", "runs": "yes", "seconds": None}]


def _fresh_log(*events: tuple[str, str, float]) -> list[dict]:
    return [{"command": ["dvc", "repro"], "plan": FRESH},
            *({kind: stage, "at": at, **({"status": 0} if kind == "end" else {})} for kind, stage, at in events)]


def test_the_time_left_learns_this_run_s_pace_and_narrows_its_range():
    # s1 took its 10 s (pace 1); ft@1 started 2 s after s1's end (DVC's gap: 2 s per stage)
    records = _fresh_log(("start", "s1", 1001), ("end", "s1", 1011), ("start", "ft@1", 1013))
    p = progress_of(records, T0, 1020)  # ft@1 7 s in; no modelled stage done: half to twice the model's time
    gaps = 2 * 5  # before ft@2, ft@3, ft@4, report, and the save after it
    report = 10  # never timed: the mean stage done here (s1), half to twice it
    assert p.left == pytest.approx(100 - 7 + 300 + gaps + report)
    assert (p.low, p.high) == pytest.approx((50 - 7 + 150 + gaps + report / 2, 200 - 7 + 600 + gaps + 2 * report))
    assert progress_line(p) == "stage 2 of 6: ft@1 · 20 s in · about 3–14 min left"
    # ft@1 took 300 s, three times the model's: the pace of the modelled stages is 3, the range 1.5x either side
    records += [{"end": "ft@1", "at": 1313, "status": 0}, {"start": "ft@2", "at": 1315}]
    p = progress_of(records, T0, 1320)
    gaps, report = 2 * 4, (10 + 300) / 2
    assert p.left == pytest.approx(300 - 5 + 600 + gaps + report)
    assert (p.low, p.high) == pytest.approx((200 - 5 + 400 + gaps + report / 2, 450 - 5 + 900 + gaps + 2 * report))
    assert progress_line(p) == "stage 3 of 6: ft@2 · 5 min 20 s in · about 11–28 min left"
    # ft@2 took 260 s: pace 560 / 200; the range from the lowest ratio seen (2.6, widened to pace / 1.1) to the
    # highest (3, widened to pace x 1.1)
    records += [{"end": "ft@2", "at": 1575, "status": 0}, {"start": "ft@3", "at": 1577}]
    p = progress_of(records, T0, 1580)
    gaps, pace, report = 2 * 3, 560 / 200, (10 + 300 + 260) / 3
    assert p.left == pytest.approx(pace * 100 - 3 + pace * 100 + gaps + report)
    assert (p.low, p.high) == pytest.approx((200 * pace / 1.1 - 3 + gaps + report / 2,
                                             200 * pace * 1.1 - 3 + gaps + 2 * report))
    assert progress_line(p) == "stage 4 of 6: ft@3 · 9 min 40 s in · about 10–17 min left"


def test_on_a_loaded_machine_earlier_times_are_scaled_by_this_run_s_pace():
    plan = [{"stage": name, "runs": "yes", "seconds": seconds, "basis": "earlier"}
            for name, seconds in (("a", 10.0), ("b", 20.0), ("c", 40.0), ("d", 80.0))]
    records = [{"command": ["dvc", "repro"], "plan": plan}, {"start": "a", "at": 1001},
               {"end": "a", "at": 1016, "status": 0}, {"start": "b", "at": 1017}]
    p = progress_of(records, T0, 1020)  # a took 15 s of 10: pace 1.5; every stage ahead timed before: one figure
    assert p.left == pytest.approx(1.5 * 20 - 3 + 1.5 * (40 + 80) + 1 * 3)
    assert (p.low, p.high) == (None, None)
    assert progress_line(p) == "stage 2 of 4: b · 20 s in · about 3 min 30 s left"


def test_a_never_timed_stage_takes_the_time_of_its_group_s_stages_done_here():
    plan = [{"stage": f"prepare@{t}", "runs": "yes", "seconds": None} for t in "abc"]
    records = [{"command": ["dvc", "repro"], "plan": plan}, {"start": "prepare@a", "at": 1001},
               {"end": "prepare@a", "at": 1021, "status": 0}, {"start": "prepare@b", "at": 1022}]
    p = progress_of(records, T0, 1027)  # prepare@b: 20 - 5, prepare@c: 20; gaps 1 s, for c and after it
    assert (p.left, p.untimed, p.low) == (15 + 20 + 2, 0, None)
    assert progress_line(p) == "stage 2 of 3: prepare@b · 27 s in · about 37 s left"
    # of another group but the same kind (one script): the mean of that kind's, from its shortest to its longest
    plan = [{"stage": "glue_sf@1", "runs": "yes", "seconds": None, "kind": "finetune"},
            {"stage": "glue_baseline@1", "runs": "yes", "seconds": None, "kind": "finetune"},
            {"stage": "ner_sf@1", "runs": "yes", "seconds": None, "kind": "finetune"},
            {"stage": "report", "runs": "yes", "seconds": None}]
    records = [{"command": ["dvc", "repro"], "plan": plan}, {"start": "glue_sf@1", "at": 1001},
               {"end": "glue_sf@1", "at": 1041, "status": 0}, {"start": "glue_baseline@1", "at": 1041},
               {"end": "glue_baseline@1", "at": 1061, "status": 0}, {"start": "ner_sf@1", "at": 1061}]
    p = progress_of(records, T0, 1071)  # and the report, of no kind: this run's mean stage, half to twice it
    assert (p.left, p.low, p.high, p.untimed) == (30 - 10 + 30, 20 - 10 + 15, 40 - 10 + 60, 0)
    assert progress_line(p) == "stage 3 of 4: ner_sf@1 · 1 min 11 s in · about 25–90 s left"


@pytest.mark.parametrize("low, high, shown", [(203, 803, "3–14 min"), (40, 90, "40–90 s"), (4000, 9000, "1–3 h"),
                                              (600.5, 659, "10–11 min"), (600, 600, None)])
def test_a_range_is_told_in_whole_units_that_hold_it(low, high, shown):
    assert progress.between(low, high) == shown


@pytest.mark.parametrize("seconds, shown", [(0.4, "0 s"), (59.6, "1 min"), (250, "4 min 10 s"), (3600, "1 h"),
                                            (7500, "2 h 5 min")])
def test_duration(seconds, shown):
    assert duration(seconds) == shown


@pytest.mark.parametrize("cmdline, arguments", [
    (["dvc", "repro", "x"], ["repro", "x"]),
    (["/venv/bin/python3", "/venv/bin/dvc", "exp", "run", "-S", "a=1"], ["exp", "run", "-S", "a=1"]),
    (["python", "-m", "dvc", "repro"], ["repro"]),
    (["/bin/sh", "-c", "python pipeline/x.py"], None),
    (["python", "pipeline/dvc_stage.py"], None),
])
def test_dvc_is_found_in_a_command_line(cmdline, arguments):
    assert dvc_arguments(cmdline) == arguments


def test_the_summary_shows_each_study_s_gain_x100_and_where_the_reports_are(tmp_path):
    metrics = tmp_path / "reports" / "metrics.json"
    metrics.parent.mkdir()
    metrics.write_text(json.dumps({
        "profile": "embedded",
        "glue": {"tiny": {"cola": {"baseline": 0.2, "sf": 0.5, "diff": 0.3}, "average": {"diff": 0.0791}}},
        "snli": {"tiny": {"snli": {"baseline": 0.8, "sf": 0.75, "diff": -0.05}}},
        "ner": {"tiny": {"conll2003": {"baseline": None, "sf": 0.7, "diff": None}}}}))
    gains, where = headline_lines(metrics)
    assert gains == "SF − baseline, mean dev main metric x 100: glue tiny average +7.9; ner tiny conll2003 n/a; " \
                    "snli tiny snli -5.0"
    assert where.startswith(f"reports: {metrics.parent / 'index.md'}")


def test_the_summary_prefers_the_headline_file_gains_with_their_intervals(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "headline.json").write_text(json.dumps({
        "data": "synthetic",
        "t1": {"gain": 7.9, "low": 6.4, "high": 9.5, "what": "SF − baseline"},
        "t7": {"vs-cnn-max": {"gain": 2.2, "low": -0.2, "high": 4.7, "what": "CNN-CNN − CNN-Max"},
               "vs-x": {"gain": 3.0, "low": 0.0, "high": 0.03, "what": "CNN-CNN − X"}},
        "t8": {"gain": -0.0, "low": None, "high": None, "what": "SF − baseline",
               "note": "no inference (no spread across seeds)"}}))
    (reports / "metrics.json").write_text(json.dumps({"glue": {"tiny": {"average": {"diff": 0.079}}}, "profile": "e",
                                                      "data": "real"}))
    gains, where = headline_lines(reports / "headline.json")
    # the data's kind; Table 7 named as it compares (encoders), never "SF − baseline"; an end 0.03 as +0.03, 0 as
    # 0.0 (never +0.0 or -0.0); a tied comparison kept, with why it has no interval
    assert gains == "gains x 100 [95% interval], synthetic data: checks the machinery, not the method: " \
                    "t1 SF − baseline +7.9 [+6.4, +9.5]; t7 CNN-CNN − CNN-Max +2.2 [-0.2, +4.7]; " \
                    "t7 CNN-CNN − X +3.0 [0.0, +0.03]; t8 SF − baseline 0.0 (no inference (no spread across seeds))"
    records = [{"plan": [{"stage": "report", "metrics": [str(reports / "headline.json"), str(reports / "metrics.json")]}]},
               {"start": "report", "at": 1.0}, {"end": "report", "at": 2.0, "status": 0}]
    lines = summary_lines(records, progress_of(records, 0.0, 2.0), "dvc repro")
    assert lines[1:] == [gains, where]
    assert headline_lines(reports / "metrics.json")[0] == \
        "SF − baseline, mean dev main metric x 100, real task data: glue tiny average +7.9"
    (reports / "odd.json").write_text(json.dumps({"glue": 3, "x": {"y": 2.0}, "z": {"w": {"r": {"diff": "a"}}}}))
    assert headline_lines(reports / "odd.json")[0] == "SF − baseline, mean dev main metric x 100: z w r n/a"


def test_the_summary_names_each_backbone_and_keeps_an_uncomputable_gain(tmp_path):
    (tmp_path / "headline.json").write_text(json.dumps({
        "data": "real", "t1": {"tiny": {"gain": 1.25, "low": -2.75, "high": 5.25, "what": "SF − baseline"},
                               "tiny-bpe": {"gain": None, "low": None, "high": None, "what": "SF − baseline"}}}))
    gains, _ = headline_lines(tmp_path / "headline.json")
    assert gains == "gains x 100 [95% interval], real task data: t1.tiny SF − baseline +1.3 [-2.8, +5.3]; " \
                    "t1.tiny-bpe SF − baseline not computable"


def _under_dvc(root: Path, monkeypatch, first: dict) -> Path:
    """This process as a stage of a dvc session whose log starts with ``first`` (its plan already made)."""
    (root / ".dvc").mkdir(exist_ok=True)
    monkeypatch.setenv("DVC_ROOT", str(root))
    monkeypatch.chdir(root)
    log = session_log(root / FOLDER, 1, time.time() - 5)
    monkeypatch.setattr(progress, "find_session", lambda folder: Session(1, time.time() - 5, ("repro",), log))
    monkeypatch.setattr(progress, "_process_start", time.time)  # the stage's process starts now, not pytest's
    append_record(log, first)
    return log


def test_a_stage_under_dvc_logs_itself_and_the_last_planned_one_ends_with_the_summary(tmp_path, monkeypatch, capsys):
    plan = [{"stage": "a", "runs": "yes", "seconds": 5.0},
            {"stage": "report", "runs": "yes", "seconds": None, "metrics": ["reports/metrics.json"]}]
    log = _under_dvc(tmp_path, monkeypatch, {"command": ["dvc", "repro"], "plan": plan})
    with stage_progress("a"):
        assert re.fullmatch(r"spanft: stage 1 of 2: a · 5 s in · about 5 s left \+ 1 stage never timed\n",
                            capsys.readouterr().err)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "metrics.json").write_text(json.dumps({"glue": {"tiny": {"average": {"diff": 0.0791}}}}))
    with stage_progress("report"):
        pass
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("spanft: stage 2 of 2: report · ")
    assert re.search(r" · (under 1 s|about \d+ s) left$", err[0]), err[0]  # this run's mean stage: a's
    assert re.fullmatch(r"spanft: done: dvc repro: 2 stages in \d+ s", err[1])
    assert err[2] == "spanft: SF − baseline, mean dev main metric x 100: glue tiny average +7.9"
    assert err[3].startswith("spanft: reports: reports/index.md")
    assert set(json.loads((tmp_path / FOLDER / TIMES).read_text())) == {"a", "report"}
    assert [(r.get("start"), r.get("end"), r.get("status")) for r in progress.read_records(log)[1:]] == [
        ("a", None, None), (None, "a", 0), ("report", None, None), (None, "report", 0)]


def test_a_failed_stage_keeps_no_time_and_dvc_q_keeps_the_lines_quiet(tmp_path, monkeypatch, capsys):
    log = _under_dvc(tmp_path, monkeypatch, {"command": ["dvc", "repro", "-q"], "quiet": True,
                                             "plan": [{"stage": "a", "runs": "yes", "seconds": None}]})
    with pytest.raises(KeyError), stage_progress("a"):
        raise KeyError("the stage failed")
    assert capsys.readouterr().err == ""
    assert progress.read_records(log)[-1]["status"] == 1
    assert not (tmp_path / FOLDER / TIMES).exists()


def test_a_script_run_by_hand_says_nothing(tmp_path, monkeypatch, capsys):
    (tmp_path / ".dvc").mkdir()
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    with stage_progress("a"):  # this test's process has no dvc above it
        pass
    assert capsys.readouterr().err == "" and not (tmp_path / FOLDER).exists()


# ------------------------------------------------------------------------------------------- spanft status


def _running_session(root: Path) -> Path:
    """A session log named after this test's own process (alive) as if it were dvc."""
    me = psutil.Process()
    path = session_log(root / FOLDER, me.pid, me.create_time())
    path.parent.mkdir(parents=True)
    started = me.create_time()
    records = [{"command": ["dvc", "exp", "run"], "plan": PLAN}, {"start": "a", "at": started + 10},
               {"end": "a", "at": started + 70, "status": 0}, {"start": "c", "at": started + 80}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_status_of_a_running_session(tmp_path, capsys):
    _running_session(tmp_path)
    started = psutil.Process().create_time()
    assert status_lines(tmp_path, now=started + 100) == [
        f"dvc exp run (pid {os.getpid()}): stage 2 of at most 4: c · 1 min 40 s in · about 1 min 35 s left"]
    assert main(["status", "--root", str(tmp_path)]) == 0
    assert f"dvc exp run (pid {os.getpid()}): stage 2 of at most 4: c · " in capsys.readouterr().out


def test_status_when_none_runs(tmp_path, capsys):
    path = _running_session(tmp_path)
    me = psutil.Process()
    path.rename(session_log(path.parent, me.pid, me.create_time() - 5))  # the pid, not the process started then
    assert main(["status", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "no dvc repro or dvc exp run is running here\n"


def test_status_outside_a_dvc_project_is_one_line(tmp_path, capsys):
    assert main(["status", "--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"spanft: error: {tmp_path}: not inside a DVC project (no .dvc " \
                                              f"folder); give --root"


def test_status_of_a_dvc_that_has_started_no_stage_yet(tmp_path, capsys):
    """Before its first stage, dvc has written no log (it is checking what changed): found among the processes."""
    (tmp_path / ".dvc").mkdir()
    fake = tmp_path / "bin" / "dvc"  # a process whose command line reads `python .../dvc repro dictionary`
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(60)\n", encoding="utf-8")
    process = subprocess.Popen([sys.executable, str(fake), "repro", "dictionary"], cwd=tmp_path)
    try:
        for _ in range(100):  # until its command line is the script's
            if psutil.Process(process.pid).cmdline()[1:2] == [str(fake)]:
                break
            time.sleep(0.02)
        assert main(["status", "--root", str(tmp_path)]) == 0
        shown = capsys.readouterr().out
        expected = rf"dvc repro dictionary \(pid {process.pid}\): \d+ s in, no stage started yet\n"
        assert re.fullmatch(expected, shown), shown
    finally:
        process.kill()
        process.wait()


def test_a_running_stage_past_its_borrowed_pace_only_slows_the_forecast():
    # s1 took 30 s of 10 (pace 3, which ft@1 borrows: no modelled stage done); ft@1 is 150 s in, under its paced
    # 300: the pace stays 3; at 400 s in, past it: the modelled pace is 400 / 100
    records = _fresh_log(("start", "s1", 1001), ("end", "s1", 1031), ("start", "ft@1", 1031))
    gaps, report = 0, 30  # no time between s1's end and ft@1's start; the report: the mean stage done (s1)
    assert progress_of(records, T0, 1181).left == pytest.approx(3 * 100 - 150 + 3 * 300 + gaps + report)
    assert progress_of(records, T0, 1431).left == pytest.approx(0 + 4 * 300 + gaps + report)
