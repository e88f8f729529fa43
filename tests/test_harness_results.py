"""Harness results without torch: the typed Event/TargetResult, the verdict, the join's
statuses (not-reached, unpredicted rules found by evidence kind), merging shard reports,
--shard, and what the text report says of failed and unstarted targets."""

from __future__ import annotations

import argparse
import json
import os

import pytest

from shapelint.cli import main
from shapelint.finding import (CheckResult, Event, Evidence, Finding, Guard, Location, ShapeRow,
                               TargetResult)
from shapelint.harness.command import Progress, build_targets, parse_shard
from shapelint.harness.join import events_of, join, runtime_rules
from shapelint.harness.runner import assemble
from shapelint.harness.target import TargetSpec
from shapelint.report import render


def spec(**kw) -> TargetSpec:
    return TargetSpec(name="t", model="m.py:build", inputs="m.py:inputs", **kw)


def recompile(path, line, batch=8, **kw) -> Event:
    return Event(kind="recompile", shape={"batch": batch, "seq_len": None}, reason="s0 <= 4",
                 detail="shape-guard", path=path, abspath=os.path.abspath(path), line=line,
                 guards=[Guard(entry="0/1", detail="shape-guard", guard="s0 <= 4",
                               abspath=os.path.abspath(path), line=line),
                         Guard(entry="0/0", detail="input-dynamic", note="promoted")], **kw)


def records(*events, rows=None, done=True):
    rows = rows or [{"batch": 1, "seq_len": None, "new_compiles": 1, "error": None, "seconds": 0.1}]
    out = [{"type": "meta", "torch_version": "2.13.0+cpu", "device": "cpu", "trace_source": "h"}]
    for i, row in enumerate(rows):
        out.append({"type": "shape", "row": row, "events": [e.to_json() for e in events] if i == 0 else [],
                    "executed": {}, "inputs": {"L['x'].size()[0]": row["batch"]}, "compiles": 2,
                    "frames": [{"name": "forward", "path": "m.py", "line": 3, "compiles": 2}]})
    if done:
        out.append({"type": "done", "compiles": 2, "frames": [], "seconds": 1})
    return out


def test_result_round_trips_typed():
    r = assemble(spec(), records(recompile("m.py", 4)))
    again = TargetResult.from_json(json.loads(json.dumps(r.to_json())))
    assert again.to_json() == r.to_json() and again == r
    (ev,) = again.events
    assert ev.locations() == [(os.path.abspath("m.py"), 4)]
    assert isinstance(ev.guards[0], Guard) and ev.guards[0].detail == "shape-guard"
    assert isinstance(again.per_shape[0], ShapeRow) and again.compiles == 2
    assert [e["line"] for e in events_of(again)] == [4]


def test_verdict_is_computed_once():
    fell = Event(kind="fallback", shape={"batch": 9}, reason="hit recompile_limit (8)",
                 detail="recompile-limit", path="m.py", abspath=os.path.abspath("m.py"), line=3)
    r = assemble(spec(max_compiles=1), records(fell))
    assert r.failed and r.problems[0] == "2 compiles exceed max-compiles 1"
    assert "fell back to eager (m.py:3): hit recompile_limit (8)" in r.problems[1]
    assert r.verdict.startswith("failed: ")
    timed_out = assemble(spec(), [], error="timed out after 20 s")
    assert timed_out.problems == ["timed out after 20 s"]


def test_text_report_of_failed_and_unstarted_targets():
    never = TargetResult(name="slow", backend="eager", dynamic="auto", error="timed out after 20 s",
                         problems=["timed out after 20 s"])
    out = render("text", CheckResult(files_checked=0), rules={}, targets=[never])
    assert "target slow: no replay (torch never started)" in out and "None" not in out
    assert "All checks passed" not in out and "1 of 1 target failed" in out
    ok = TargetResult(name="fine", torch_version="2.13", device="cpu", backend="eager", dynamic="auto")
    assert "All checks passed (0 files, 1 target)" in render("text", CheckResult(), rules={}, targets=[ok])


def test_progress_lines_are_escaped(capsys):
    p = Progress(1)
    p.shape(spec(), ShapeRow(batch=1, seq_len=None, new_compiles=0, seconds=0.1,
                             error="ValueError: \x1b[31mred\x1b[0m"))
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b[31mred" in err


def test_join_statuses_and_runtime_rules(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("a\nb\nc\nd\ne\nf\n")
    path = str(src)
    f_hit = Finding("SL101", "size-branch", Location(path, 4), "m", evidence=("recompile",))
    f_seen = Finding("SL101", "size-branch", Location(path, 2), "m", evidence=("recompile",))
    f_dark = Finding("SL101", "size-branch", Location(path, 6), "m", evidence=("recompile",))
    t = TargetResult(name="t", shapes=[{"batch": 8, "seq_len": None}],
                     executed={path: [1, 2, 3, 4]},
                     events=[recompile(path, 4), recompile(path, 3),
                             Event(kind="recompile", shape={}, reason="batch < 16", path=path,
                                   abspath=path, line=1, framework=True)])
    rules = {"SL900": type("R", (), {"code": "SL900", "name": "unpredicted-recompile",
                                      "evidence": ("recompile",), "runtime_only": True})}
    out = {(f.rule, f.line): f for f in join([f_hit, f_seen, f_dark], [t], [path], rules)}
    assert out[("SL101", 4)].status == "confirmed"
    assert out[("SL101", 2)].status == "not-seen"
    assert out[("SL101", 6)].status == "not-reached"
    assert out[("SL900", 3)].status == "unpredicted"
    assert ("SL900", 1) not in out  # a framework guard is torch's, not the user's
    assert runtime_rules(rules) == {"recompile": ("SL900", "unpredicted-recompile")}
    quiet = join([f_hit], [t], [path], rules, unpredicted=False)
    assert [f.rule for f in quiet] == ["SL101"]


def test_shard_is_a_deterministic_share():
    settings = argparse.Namespace(targets=[{"name": f"t{i}", "model": "m.py:b", "inputs": "m.py:i"}
                                           for i in range(5)])
    args = lambda s: argparse.Namespace(model=None, inputs=None, target=[], shard=s)  # noqa: E731
    shares = [[t.name for t in build_targets(args(f"{k}/2"), settings)] for k in (1, 2)]
    assert shares == [["t0", "t2", "t4"], ["t1", "t3"]]
    with pytest.raises(Exception):
        parse_shard("3/2")


def test_report_merges_shards(tmp_path, capsys):
    def doc(status, target, events):
        f = Finding("SL101", "size-branch", Location("m.py", 4), "m", status=status,
                    evidence_events=events)
        t = TargetResult(name=target, torch_version="2.13", device="cpu", backend="eager",
                         dynamic="auto", compiles=2)
        return {"version": "0", "files_checked": 1, "findings": [f.to_json()], "errors": [],
                "targets": [t.to_json()]}

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc("not-seen", "one", [Evidence(kind="not-seen", summary="x")])))
    b.write_text(json.dumps(doc("confirmed", "two", [Evidence(kind="recompile", summary="y")])))
    os.chdir(tmp_path)
    assert main(["report", str(a), str(b), "--format", "json", "--exit-zero"]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in merged["targets"]] == ["one", "two"]
    (f,) = merged["findings"]
    assert f["status"] == "confirmed" and f["evidence_events"] == [{"kind": "recompile", "summary": "y"}]


def test_example_workflow_merges_a_matrix_of_shards():
    from conftest import REPO

    with open(os.path.join(REPO, "examples", "github-workflow.yml"), encoding="utf-8") as fh:
        text = fh.read()
    assert "shapelint run --shard ${{ matrix.shard }}/4" in text
    for fmt in ("github", "sarif", "markdown"):
        assert f"shapelint report shard-*.json --format {fmt}" in text
    assert text.count("upload-sarif") == 1 and "GITHUB_STEP_SUMMARY" in text


def test_a_buffer_guard_is_blamed_on_the_register_buffer_that_ran(tmp_path, monkeypatch):
    """torch names a buffer by its dict (`_buffers['weights']`) and the write is a call
    (`register_buffer`), as in M2M100's position table (tests/cases/real/r34)."""
    import importlib

    from shapelint.harness.worker import attribute_writes

    (tmp_path / "tables.py").write_text(
        "class Table:\n"
        "    def forward(self, n):\n"
        "        if n > 4:\n"
        "            self.grow(n)\n"
        "\n"
        "    def grow(self, n):\n"
        "        self.register_buffer('weights', n)\n"
        "        setattr(self, 'scale', n)\n"
        "\n"
        "    def register_buffer(self, name, value):\n"
        "        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    Table = importlib.import_module("tables").Table
    path = os.path.abspath(str(tmp_path / "tables.py"))

    class Ran:
        def executed(self):
            return {path: [3, 4, 7, 8]}

    assert attribute_writes(Table(), {}, Ran(), "L['self']._buffers['weights']") == [(path, 7)]
    assert attribute_writes(Table(), {}, Ran(), "L['self'].scale") == [(path, 8)]


NAMED = """\
import torch


def deco(fn):
    def inner(*args):
        return fn(*args)
    return inner


class Classifier(torch.nn.Module):
    def forward(self, ids, mask):
        longest = int(mask.sum(1).max())
        ids = ids[:, :longest]
        return ids * 2
"""


def test_torch_names_in_the_users_words(tmp_path):
    from shapelint.harness.names import Names

    path = str(tmp_path / "m.py")
    (tmp_path / "m.py").write_text(NAMED)
    names = Names()
    text, note = names.guard("___stack0 == 17", "torch_dynamo_resume_in_forward_at_12", path)
    assert text == "longest == 17"
    assert note == "`longest` (line 12) is carried across the graph break at line 12"
    text, note = names.guard("___stack1 <= 8", "torch_dynamo_resume_in_forward_at_13", path)
    assert text == "<the value computed at line 13> <= 8" and "line 13" in note
    assert names.guard("L['n'] == 4", "forward", path) == ("n == 4", "")
    # a resume frame by its function; a decorator's wrapper by the function of the blamed line
    assert names.frame("torch_dynamo_resume_in_forward_at_12", path, 11) == \
        "Classifier.forward, resumed after the graph break at line 12"
    assert names.frame("inner", path, 5, path, 13) == "Classifier.forward"
    assert names.frame("forward", path, 11, path, 13) == "Classifier.forward"


def test_fail_on_gates_give_the_markers_verdicts():
    from shapelint.harness.gate import Gate, code_caused, gate_problems, parse_gates

    promoted = Event(kind="recompile", frame="M.forward", detail="input-dynamic",
                     guards=[Guard(entry="0/0", detail="input-dynamic", input="x", dim=0)])
    again = Event(kind="recompile", frame="M.forward", detail="input-dynamic",  # same dim twice
                  guards=[Guard(entry="0/1", detail="input-dynamic", input="x", dim=0)])
    branch = recompile("m.py", 4)  # the newest entry's guard is a shape guard on line 4
    stale = Event(kind="recompile", frame="M.forward", detail="input-dynamic", guards=[
        Guard(entry="0/0", detail="value-guard", guard="n == 1", abspath="/m.py", line=9),
        Guard(entry="0/1", detail="input-dynamic", input="y", dim=1)])  # an old graph failed too
    brk = Event(kind="graph-break", reason="print", path="m.py", line=5)
    t = TargetResult(name="t", events=[promoted, again, branch, stale, brk])
    assert code_caused(t.events) == [again, branch]
    assert stale.torch_step and not branch.torch_step
    problems = gate_problems(t, parse_gates("code-recompiles,graph-breaks,any-recompile"))
    assert problems[0].startswith("2 recompile(s) caused by the code at m.py:4")
    assert "4 recompile(s)" in problems[1] and "1 graph break(s)" in problems[2]
    assert gate_problems(t, []) == [] and gate_problems(TargetResult(name="ok"), list(Gate)) == []
    with pytest.raises(ValueError, match="unknown `bogus`"):
        parse_gates("bogus")


def test_remedies_after_the_knobs_are_code_changes():
    from shapelint.finding import Counts, Remedy, RemedyKind, RemedyVerdict
    from shapelint.harness.remedy import code_changes, describe, within_budget

    f = Finding("SL101", "size-branch", Location("m.py", 4), "m", status="confirmed",
                hint="move the decision out of the compiled region",
                evidence_events=[Evidence(kind="recompile", target="t")])
    other = f.replace(evidence_events=[Evidence(kind="recompile", target="u")])
    t = TargetResult(name="t", max_compiles=2, remedies=[
        Remedy(kind=RemedyKind.DYNAMIC_TRUE, code="torch.compile(model, dynamic=True)",
               where="where the model is compiled", before=Counts(compiles=5),
               after=Counts(compiles=4), verdict=RemedyVerdict.HELPS),
        Remedy(kind=RemedyKind.CAPTURE_SCALAR_OUTPUTS, code="cfg = True", before=Counts(compiles=5),
               after=Counts(compiles=6), verdict=RemedyVerdict.WORSE, problem="x\ny")])
    assert within_budget(t) is False  # 4 compiles is still over 2
    assert [describe(r) for r in t.remedies] == [
        "`torch.compile(model, dynamic=True)` where the model is compiled: 5 compiles -> 4 "
        "(measured, helps)", "`cfg = True`: worse (5 compiles -> 6): x"]
    (change,) = code_changes(t, [f, other])
    assert describe(change) == ("change the code at m.py:4 (SL101 size-branch): move the decision "
                                "out of the compiled region")
    assert within_budget(TargetResult(name="t")) is None


def test_nothing_points_into_shapelints_own_files(tmp_path):
    """An event placed in shapelint's own code (an inputs mistake raised in the worker, before
    issue 20 item 5: an SL903 at shapelint/harness/worker.py) keeps no place there, and the
    files the replay ran there are not checked (one filter: runner.not_ours)."""
    import shapelint.harness.worker as worker

    own = os.path.abspath(worker.__file__)
    ev = Event(kind="compile-error", shape={"batch": 1, "seq_len": 5}, reason="TargetError: x",
               path=own, abspath=own, line=277,
               guards=[Guard(entry="0/0", abspath=own, line=3)])
    user = recompile("m.py", 4)
    rec = records(ev, user)
    rec[1]["executed"] = {own: [270, 277], os.path.abspath("m.py"): [4]}
    rec.insert(1, {"type": "sources", "files": [own, os.path.abspath("m.py")]})
    r = assemble(spec(), rec)
    mistake, kept = r.events
    assert mistake.path is None and mistake.line is None and not mistake.locations()
    assert "shapelint" in mistake.note and all(g.path is None for g in mistake.guards)
    assert kept.path == "m.py" and kept.line == 4  # the user's places stay
    assert list(r.executed) == ["m.py"] and r.sources == [os.path.abspath("m.py")]
    assert "worker.py" not in json.dumps(r.to_json())
