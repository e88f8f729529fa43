"""The blame logic on recorded structured traces (tests/fixtures/traces, recorded from real
torch 2.13 runs by tests/fixtures/traces/record.py): each event kind's blame, one record per
recompile, the recompile limit and the other fallbacks to eager, framework guards and benign
specializations, in seconds and without compiling anything (torch's sympy helpers re-evaluate
the guards). The real-torch tests (test_harness.py)
keep the end-to-end path."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Tuple

import pytest

from shapelint.finding import Event
from shapelint.harness.blame import Recorder, mark_benign, varying_sources

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "traces")


class Strings:
    """The interned-path table of a recorded run."""

    def __init__(self) -> None:
        self.strings: Dict[int, str] = {}

    def filename(self, idx: Any):
        return self.strings.get(idx) if isinstance(idx, int) else None

    def known_paths(self) -> List[str]:
        return list(self.strings.values())


def replay(name: str) -> Tuple[Recorder, List[Dict[str, Any]], Dict[str, Any]]:
    """Feed a fixture to a Recorder as the worker did: per shape, the events, then the call's
    outcome. Returns the recorder, one row per shape (new events, eager) and the recorded
    result (compile counts per shape as the live run saw them)."""
    with open(os.path.join(HERE, f"{name}.jsonl")) as fh:
        records = [json.loads(line) for line in fh]
    meta = next(r for r in records if r["t"] == "meta")
    strings = Strings()
    segment_values: Dict[str, Any] = {}
    writes: Dict[str, List] = {}

    def values(src: str):
        if src not in segment_values or segment_values[src] is None:
            raise KeyError(src)
        return segment_values[src]

    rec = Recorder(strings, values, mode=meta["dynamic"],
                   attribute_writes=lambda n: [tuple(x) for x in writes.get(n, [])],
                   tdir="/nonexistent-torch")
    rows: List[Dict[str, Any]] = []
    inputs: List[Dict[str, Any]] = []
    i = 0
    while i < len(records):
        r = records[i]
        if r["t"] == "str":
            strings.strings[r["idx"]] = r["path"]
        elif r["t"] == "shape":
            j = i + 1  # what this shape looked up, known before its events are fed
            segment_values.clear()
            while j < len(records) and records[j]["t"] != "shape":
                if records[j]["t"] == "value":
                    segment_values[records[j]["src"]] = records[j].get("value")
                elif records[j]["t"] == "writes":
                    writes[records[j]["name"]] = records[j]["lines"]
                elif records[j]["t"] == "str":
                    strings.strings[records[j]["idx"]] = records[j]["path"]
                j += 1
            before = rec.compiles
            rec.begin_shape(r["shape"])
            inputs.append({src: v for src, v in segment_values.items()})
        elif r["t"] == "ev":
            rec.on_event(r["ev"])
        elif r["t"] == "end":
            where = tuple(r["where"]) if r.get("where") else None
            if r.get("error"):
                rec.add_call_error(r["error"], where)
            new = rec.end_shape(r.get("error"), where, r.get("eager"))
            rows.append({"shape": rec.shape, "new": new, "compiles": rec.compiles - before,
                         "eager": r.get("eager") is not None or any(e.kind == "fallback" for e in new)})
        i += 1
    result = next(r for r in records if r["t"] == "result")
    return rec, rows, result


def kinds(events: List[Event], kind: str) -> List[Event]:
    return [e for e in events if e.kind == kind]


def lines(events: List[Event]) -> List[Tuple[str, int]]:
    return [(os.path.basename(ab), ln) for e in events for ab, ln in e.locations()]


def test_fixtures_are_small_and_complete():
    names = sorted(f[:-6] for f in os.listdir(HERE) if f.endswith(".jsonl"))
    import sys

    sys.path.insert(0, HERE)
    from record import SCENARIOS  # the recorder's scenario list

    assert names == sorted(SCENARIOS)
    assert all(os.path.getsize(os.path.join(HERE, f"{n}.jsonl")) < 200_000 for n in names)


def test_counts_match_the_live_run():
    for name in ("size_branch", "int_argument", "item_break", "recompile_limit", "attribute_size"):
        rec, rows, result = replay(name)
        assert rec.compiles == result["compiles"], name
        assert [r["compiles"] for r in rows] == [r["new_compiles"] for r in result["rows"]], name


def test_size_branch_one_record_per_recompile_blamed_on_its_line():
    pytest.importorskip("torch")  # the failed guards are re-evaluated with torch's sympy functions
    rec, rows, _ = replay("size_branch")
    recompiles = kinds(rec.events, "recompile")
    assert len(recompiles) == 2  # batch 2 (automatic dynamic) and batch 17 (the branch)
    promoted, branch = recompiles
    assert promoted.shape["batch"] == 2 and promoted.line is None and promoted.detail == "input-dynamic"
    assert "automatic dynamic" in promoted.reason and promoted.note
    assert branch.shape["batch"] == 17 and (os.path.basename(branch.path), branch.line) == ("model.py", 7)
    # the one recompile holds every failed cache entry's guard
    assert {g.entry for g in branch.guards} == {"0/0", "0/1"}
    assert [g.detail for g in branch.guards] == ["shape-guard", "input-dynamic"]
    assert branch.guards[0].guard == "x.size()[0] < 10"  # torch's s77, named by its source


def test_int_argument_value_guard():
    rec, _, _ = replay("int_argument")
    placed = [e for e in kinds(rec.events, "recompile") if e.line]
    assert placed and all(e.detail in ("value-guard", "shape-guard") for e in placed)
    assert ("model.py", 7) in lines(placed)


def test_item_graph_break_with_registry_id():
    rec, _, _ = replay("item_break")
    (gb,) = kinds(rec.events, "graph-break")
    assert (os.path.basename(gb.path), gb.line, gb.registry_id) == ("model.py", 7, "GB0124")
    assert "item()" in gb.reason  # torch's reason, not the "Encountered graph break" preamble


def test_recompile_limit_is_a_fallback_with_its_line():
    rec, rows, result = replay("recompile_limit")
    recompiles = kinds(rec.events, "recompile")
    assert len(recompiles) == 8  # one record per recompile, not one per failed cache entry
    assert len(recompiles[-1].guards) == 8  # ... holding each entry's failed guard
    assert all("dynamic=False compiles one graph per size" in e.reason for e in recompiles)
    (fb,) = kinds(rec.events, "fallback")
    assert fb.detail == "recompile-limit" and fb.shape["batch"] == 9
    assert (os.path.basename(fb.path), fb.line) == ("model.py", 6)  # forward's def line
    assert "recompile_limit (8)" in fb.reason
    assert [r["eager"] for r in rows] == [False] * 8 + [True] * 4
    assert [r["eager"] for r in result["rows"]][8:] == [True] * 4  # as the live run saw it


def test_accumulated_recompile_limit():
    rec, rows, _ = replay("accumulated_limit")
    (fb,) = kinds(rec.events, "fallback")
    assert fb.detail == "accumulated-recompile-limit" and "accumulated_recompile_limit (3)" in fb.reason
    assert rows[-1]["eager"]


def test_unhandled_graph_break_skips_the_frame():
    rec, rows, _ = replay("unhandled_break")
    (gb,) = kinds(rec.events, "graph-break")
    assert gb.detail == "unhandled" and gb.line == 9 and "eagerly" in gb.note
    assert gb.registry_id == "GB0059" and "Failed to handle" not in gb.reason  # the break's own reason
    (fb,) = kinds(rec.events, "fallback")
    assert fb.detail == "unhandled-graph-break" and fb.line == 9
    assert all(r["eager"] for r in rows)
    assert not kinds(rec.events, "compile-error")


def test_suppressed_compile_error_is_a_fallback():
    rec, rows, _ = replay("suppressed_error")
    (fb,) = kinds(rec.events, "fallback")
    assert fb.detail == "compile-failed" and fb.path is not None
    assert rows[0]["eager"]
    assert not kinds(rec.events, "compile-error")  # the call did not raise: nothing else says it


def test_tensor_attribute_size_blamed_on_its_write():
    rec, _, _ = replay("attribute_size")
    placed = [e for e in kinds(rec.events, "recompile") if e.detail == "attribute-write"]
    assert placed, [(e.detail, e.reason) for e in rec.events]
    assert ("model.py", 12) in lines(placed)  # self.cache = torch.zeros(x.shape[0], 3)
    assert any(g.attribute == "self.cache" for e in placed for g in e.guards)


def test_conv_batch_guard_is_a_framework_guard():
    pytest.importorskip("torch")  # the failed guards are re-evaluated with torch's sympy functions
    rec, _, _ = replay("conv_batch16")
    (guard,) = [e for e in kinds(rec.events, "recompile") if e.line]
    assert guard.shape["batch"] == 17 and guard.framework
    assert ("model.py", 11) in lines([guard])  # y = self.conv(x): the call into torch.nn


def test_constant_dims_under_dynamic_true_are_not_blamed():
    rec, _, _ = replay("constant_dims")
    specs = kinds(rec.events, "specialization")
    assert specs  # torch pins the constant width (the check and the assert)
    mark_benign(rec.events, varying_sources([{"L['x'].size()[0]": b, "L['x'].size()[1]": 12}
                                             for b in (1, 2, 3, 8)]))
    assert all(s.benign for s in specs)
    assert not [e for e in rec.events if e.kind != "specialization" and e.line]


def test_lstm_state_break_names_the_call():
    rec, _, _ = replay("lstm_state")
    (gb,) = kinds(rec.events, "graph-break")
    assert (os.path.basename(gb.path), gb.line) == ("model.py", 14)
    assert gb.registry_id == "GB0014"


def test_int_across_break_guarded_in_the_resumed_frame():
    rec, _, _ = replay("int_across_break")
    resumed = [e for e in kinds(rec.events, "recompile") if "resumed after the graph break" in e.frame]
    assert resumed and resumed[0].detail == "value-guard"
    assert ("model.py", 9) in lines(resumed)  # return x.reshape(n, -1) * n


def test_value_guard_blames_the_calls_in_its_stack():
    rec, _, _ = replay("int_through_call")
    (guard,) = [e for e in kinds(rec.events, "recompile") if e.detail == "value-guard"]
    assert (os.path.basename(guard.path), guard.line) == ("model.py", 7)  # torch.arange(past, ...)
    assert [(os.path.basename(a.abspath), a.line) for a in guard.also] == [("model.py", 15)]
    assert ("model.py", 15) not in [(os.path.basename(p), ln) for p, ln in guard.locations(callers=False)]


def test_every_event_names_a_line_or_says_why():
    for name in sorted(f[:-6] for f in os.listdir(HERE) if f.endswith(".jsonl")):
        rec, _, _ = replay(name)
        for e in rec.events:
            assert e.line or e.note, (name, e)


def test_a_suppressed_guard_is_not_a_guard(tmp_path):
    """torch logs `guard_added_fast` also for a guard it evaluates under `suppress_guards` and
    never installs (`eval [guard suppressed]`, from fake-tensor code): r24's reshape logged
    `Eq((s72//4), 1)` so at line 61 while the installed guard came from line 64. The event has
    no prefix; the line of ShapeEnv that logged it says which it was."""
    shape_env = tmp_path / "symbolic_shapes.py"
    shape_env.write_text("def _evaluate_expr(self, g):\n"
                         "    self._log_guard(\"eval\", g, forcing_spec=False)\n"
                         "    self._log_guard(\"eval [guard suppressed]\", g, forcing_spec=False)\n")
    strings = Strings()
    strings.strings[7] = str(shape_env)
    rec = Recorder(strings, lambda src: 1, mode="true", tdir="/nonexistent-torch")

    def md(line):
        return {"expr": "Eq((s72//4), 1)", "user_stack": [],
                "stack": [{"filename": 7, "line": line, "name": "_evaluate_expr"}]}

    assert rec.suppressed(md(3)) and not rec.suppressed(md(2))
    assert not rec.suppressed({"expr": "Eq(s0, 2)", "stack": []})


def test_what_torch_adds_inside_a_library_is_blamed_on_the_users_call():
    """torch inlines an installed library's code like the user's own: the guards it adds there
    (`x.shape[0] < width` in sizelib.fit, `n > 1` in sizelib.scale) and the graph break (a
    print in sizelib.report) sit in the library's file, but the user can act only at their call
    into it (the line torch's measured verdict names for the user models of tests/user_models).
    The library's own line is kept in the note; nothing points into site-packages."""
    pytest.importorskip("torch")  # the failed guards are re-evaluated with torch's sympy functions
    rec, _, _ = replay("library_call")
    places = [(e.kind, p) for e in rec.events for p in
              [(e.abspath, e.line)] + [(g.abspath, g.line) for g in e.guards] if p[0]]
    assert places and not any("site-packages" in p[0] for _, p in places)
    (gb,) = kinds(rec.events, "graph-break")
    assert (os.path.basename(gb.path), gb.line) == ("model.py", 13)
    assert "sizelib/__init__.py:15 in report" in gb.note
    by_line = {g.line: g for e in kinds(rec.events, "recompile") for g in e.guards if g.line}
    assert by_line[12].detail == "value-guard" and "sizelib/__init__.py:10" in by_line[12].note
    assert by_line[11].detail == "shape-guard" and "sizelib/__init__.py:5" in by_line[11].note
    shape = next(e for e in kinds(rec.events, "recompile") if e.shape["batch"] == 8)
    assert (os.path.basename(shape.path), shape.line) == ("model.py", 11)


def test_a_library_is_what_an_installed_distribution_put_there(tmp_path):
    """scope.is_library: a file under site-packages, or in a top-level package that a
    `.dist-info/RECORD` beside it lists (`pip install --target DIR`); the project's own
    package is not (an editable install's `.egg-info` beside it is not an installed copy)."""
    from shapelint.harness.scope import is_library

    target = tmp_path / "libs"
    (target / "sizelib").mkdir(parents=True)
    (target / "sizelib" / "__init__.py").write_text("")
    (target / "one.py").write_text("")
    (target / "sizelib-1.0.dist-info").mkdir()
    (target / "sizelib-1.0.dist-info" / "RECORD").write_text(
        "sizelib/__init__.py,sha256=x,0\none.py,,\nsizelib-1.0.dist-info/RECORD,,\n../../bin/x,,\n")
    (target / "vendored").mkdir()
    (target / "vendored" / "m.py").write_text("")
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg.egg-info").mkdir()
    (proj / "pkg" / "model.py").write_text("")
    assert is_library(str(target / "sizelib" / "__init__.py"))
    assert is_library(str(target / "one.py"))
    assert not is_library(str(target / "vendored" / "m.py"))
    assert not is_library(str(proj / "pkg" / "model.py"))
    assert is_library("/opt/venv/lib/python3.11/site-packages/transformers/masking_utils.py")


def test_the_blamed_frame_is_the_users_call_into_a_library():
    """Recorder.pick, on a stack's frames outside torch (outermost first): the innermost frame
    outside library code, with the library frame under it for the note; a stack of library
    frames only (a library model compiled on its own) keeps its innermost frame."""
    lib = "/v/site-packages/transformers/"
    rec = Recorder(Strings(), tdir="/nonexistent-torch")
    user = ("/proj/model.py", 28, "forward")
    inner = (lib + "masking_utils.py", 846, "_preprocess_mask_arguments")
    assert rec.pick([user, (lib + "bert.py", 900, "forward"), inner]) == (user, inner)
    assert rec.pick([(lib + "bert.py", 900, "forward"), inner]) == (inner, None)
    callback = ("/proj/hooks.py", 3, "hook")  # the user's code called back from the library
    assert rec.pick([user, inner, callback]) == (callback, None)
    assert rec.pick([]) == (None, None)


def test_a_range_guard_is_the_01_specialization_only_at_a_size_0_or_1():
    """torch prints a failed range guard (`2 <= x.size()[0] <= 32`) merged from its own implicit
    lower bound and the bounds guards added; when no logged guard of the entry is false, it is
    the 0/1 specialization only if a size it names is 0 or 1 now: at 5 it is a range guard on
    the line torch prints, not a size-1 claim."""
    pytest.importorskip("torch")  # the guards are re-evaluated with torch's sympy functions
    strings = Strings()
    strings.strings[1] = "/proj/model.py"
    size = {"value": 1}
    rec = Recorder(strings, lambda src: size["value"] if src == "L['x'].size()[0]" else _missing(src),
                   tdir="/nonexistent-torch")
    rec.symbols[(0, 0)] = {"s0": "L['x'].size()[0]"}
    rec.guards[(0, 0)] = [{"expr": "s0 <= 32", "user_stack": [{"filename": 1, "line": 5, "name": "forward"}]}]
    text = "0/0: 2 <= x.size()[0] <= 32  # y = x[:32]  # proj/model.py:5 in forward"
    (g,) = rec._blame(text)
    assert g.detail == "size-one"
    size["value"] = 5
    (g,) = rec._blame(text)
    assert g.detail == "shape-guard" and g.line == 5


def _missing(src):
    raise KeyError(src)


def test_a_size_mismatch_of_a_dim_the_code_pinned_is_blamed_on_the_pin():
    """timm_resnet_tolist: `logits + bias`, bias stacked from a list of 2, pins the resumed
    frame's dynamic `logits` dim 0 to 2 (`Eq(s88, 2)` at line 26); at batch 3 torch reports
    `tensor 'logits' size mismatch at index 0. expected 2`, which is that guard failing, not
    automatic dynamic. With no false guard on the dim it stays torch's own step."""
    pytest.importorskip("torch")  # the guards are re-evaluated with torch's sympy functions
    strings = Strings()
    strings.strings[1] = "/proj/model.py"
    rec = Recorder(strings, lambda src: 3 if src == "L['logits'].size()[0]" else _missing(src),
                   tdir="/nonexistent-torch")
    rec.symbols[(1, 2)] = {"s88": "L['logits'].size()[0]", "s5": "L['x'].size()[0]"}
    rec.guards[(1, 2)] = [
        {"expr": "Eq(s88, 2)", "user_stack": [{"filename": 1, "line": 26, "name": "forward"}]},
        {"expr": "s5 > 9", "user_stack": [{"filename": 1, "line": 30, "name": "forward"}]}]
    (g,) = rec._blame("1/2: tensor 'logits' size mismatch at index 0. expected 2, actual 3")
    assert (g.detail, g.line, g.input, g.dim) == ("shape-guard", 26, "logits", 0)
    assert "pinned to 2" in g.note
    (g,) = rec._blame("1/0: tensor 'logits' size mismatch at index 0. expected 1, actual 3")
    assert g.detail == "input-dynamic" and g.line is None


def test_a_pinned_dim_shared_by_duck_sizing_is_blamed_on_the_pin():
    """roberta_chunk_pool: input_ids and attention_mask had the same length and shared one
    symbol (duck sizing), which torch names by attention_mask; `range(0, h.shape[1], chunk)`
    pinned it (`Eq(s53, 8)`, line 27), and torch reports `tensor 'input_ids' size mismatch at
    index 1. expected 8, actual 13`: the pin on the symbol now 13 is the cause."""
    pytest.importorskip("torch")  # the guards are re-evaluated with torch's sympy functions
    strings = Strings()
    strings.strings[1] = "/proj/model.py"
    sizes = {"L['attention_mask'].size()[1]": 13, "L['input_ids'].size()[0]": 2}
    rec = Recorder(strings, lambda src: sizes[src], tdir="/nonexistent-torch")
    rec.symbols[(0, 2)] = {"s53": "L['attention_mask'].size()[1]", "s0": "L['input_ids'].size()[0]"}
    rec.guards[(0, 2)] = [
        {"expr": "Eq(s53, 8)", "user_stack": [{"filename": 1, "line": 27, "name": "forward"}]},
        {"expr": "Eq(s0, 1)", "user_stack": [{"filename": 1, "line": 30, "name": "forward"}]}]
    (g,) = rec._blame("0/2: tensor 'input_ids' size mismatch at index 1. expected 8, actual 13")
    assert (g.detail, g.line, g.input, g.dim) == ("shape-guard", 27, "input_ids", 1)
