"""The dynamic harness on real torch.compile runs (backend eager, CPU): counts, blame, faults."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import write_tree

torch = pytest.importorskip("torch")

from shapelint.harness.runner import run_target  # noqa: E402
from shapelint.harness.target import TargetSpec  # noqa: E402

pytestmark = pytest.mark.slow


def case_spec(cases_root, case, **kw) -> TargetSpec:
    base = os.path.join(cases_root, case)
    return TargetSpec(name=case, model="model.py:build", inputs="model.py:inputs",
                      base_dir=base, **kw)


def blamed(result, kind):
    return {(os.path.basename(ab), line) for e in result.of_kind(kind) for ab, line in e.locations()}


def test_size_branch_recompile_is_blamed_on_its_line(cases_root):
    res = run_target(case_spec(cases_root, "a04_size_lt_threshold"))
    assert res.error is None and not res.failed
    assert res.compiles == 3
    assert [r.new_compiles for r in res.per_shape] == [1, 1, 0, 0, 0, 1]
    promoted, branch = res.of_kind("recompile")  # one record per recompile
    assert promoted.shape["batch"] == 2 and promoted.line is None  # automatic dynamic: no line
    assert promoted.detail == "input-dynamic" and "automatic dynamic" in promoted.reason
    assert branch.shape["batch"] == 17 and branch.line == 7 and branch.detail == "shape-guard"
    assert [g.entry for g in branch.guards] == ["0/1", "0/0"]  # every failed cache entry


def test_value_guard_uses_user_stack(cases_root):
    res = run_target(case_spec(cases_root, "a06_int_arg_used_then_compared"))
    assert res.compiles == 3
    assert ("model.py", 8) in blamed(res, "recompile")


def test_graph_break_with_registry_id(cases_root):
    res = run_target(case_spec(cases_root, "b45_item_normalizer"))
    assert res.compiles == 4
    gb = res.of_kind("graph-break")
    assert [(os.path.basename(g.path), g.line, g.registry_id) for g in gb] == [("model.py", 7, "GB0124")]


def test_helper_in_other_module(cases_root):
    res = run_target(case_spec(cases_root, "b53_helper_chain_modulo"))
    assert res.compiles == 3
    assert ("padutils.py", 10) in blamed(res, "recompile")


def test_compile_error_is_reported_and_fails_the_target(cases_root):
    res = run_target(case_spec(cases_root, "b42_custom_op_no_fake"))
    assert res.failed and all(r.error for r in res.per_shape)
    assert ("model.py", 17) in blamed(res, "compile-error")


FAULTS = """
import os, time, torch
from torch import nn

class Plain(nn.Module):
    def forward(self, x):
        return x * 2

class Flaky(nn.Module):
    def forward(self, x):
        if x.shape[0] == 3:
            raise ValueError("bad batch")
        return x * 2

class Hog(nn.Module):
    def forward(self, x):
        if x.shape[0] >= 3:
            keep = []
            while True:
                keep.append(torch.ones(64, 1024, 1024))
        return x

class Crash(nn.Module):
    def forward(self, x):
        if x.shape[0] >= 2:
            os.abort()
        return x

def plain():
    return Plain()

def flaky():
    return Flaky()

def hog():
    return Hog()

def crash():
    return Crash()

def hang():
    time.sleep(600)

def raises():
    raise RuntimeError("cannot build the model")

def inputs(batch):
    return (torch.ones(batch, 4),)

def wrong_inputs(batch):
    return 42
"""


def fault(tmp_path, model, inputs="inputs", **kw):
    write_tree(tmp_path, {"faults.py": FAULTS})
    return run_target(TargetSpec(name=model, model=f"faults.py:{model}", inputs=f"faults.py:{inputs}",
                                 base_dir=str(tmp_path), batch_sizes=[1, 2, 3, 4], **kw))


def test_factory_that_raises(tmp_path):
    res = fault(tmp_path, "raises")
    assert res.failed and res.error.startswith("model `faults.py:raises`: the factory failed")
    assert "cannot build" in res.error and not res.per_shape


def test_inputs_of_the_wrong_type(tmp_path):
    res = fault(tmp_path, "plain", inputs="wrong_inputs")
    assert res.failed and not res.per_shape and not res.events  # the target's error, said once
    assert res.error.startswith("inputs `faults.py:wrong_inputs` returned int at batch=1: it must "
                                "return a tuple of args")


def test_forward_that_raises_at_one_batch_only(tmp_path):
    res = fault(tmp_path, "flaky")
    errors = {r.batch: r.error for r in res.per_shape}
    assert errors[1] is None and errors[2] is None and errors[4] is None
    assert "bad batch" in errors[3]
    assert res.failed and res.compiles >= 2


def test_target_that_hangs_times_out_and_keeps_nothing_lost(tmp_path):
    res = fault(tmp_path, "hang", timeout=20)
    assert res.failed and "timed out" in res.error


def test_target_that_allocates_until_killed(tmp_path):
    res = fault(tmp_path, "hog", memory_limit_mb=6000, timeout=120)
    rows = {r.batch: r for r in res.per_shape}
    assert rows[1].error is None and rows[2].error is None  # finished shapes are kept
    assert "out of memory" in rows[3].error


def test_target_that_crashes_the_interpreter(tmp_path):
    res = fault(tmp_path, "crash")
    assert res.failed and "crashed" in res.error and "aborted" in res.error
    assert [r.batch for r in res.per_shape] == [1]  # what finished before the crash


def test_cli_run_json_joins_static_findings(tmp_path, cases_root):
    case = os.path.join(cases_root, "b57_warn_large_batch")
    out = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-m", "shapelint.cli", "run", "--model", "model.py:build",
                           "--inputs", "model.py:inputs", "--batch-sizes", "1,2,3,4,8,17",
                           "--format", "json", "-o", str(out), "--no-cache"], cwd=case,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    (target,) = doc["targets"]
    for key in ("name", "torch_version", "device", "backend", "dynamic", "shapes", "compiles",
                "per_shape", "events", "executed", "problems", "failed", "error"):
        assert key in target
    assert {e["kind"] for e in target["events"]} <= {"recompile", "specialization", "graph-break",
                                                      "compile-error", "fallback"}
    # the default device is auto: CUDA where this machine has it (seen on an H100), else CPU
    assert target["compiles"] == 4
    assert target["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    status = {(f["line"], f["rule"]): f["status"] for f in doc["findings"]}
    assert status[(14, "SL101")] == "confirmed"
    assert status[(15, "SL203")] == "confirmed"
    ev = next(f for f in doc["findings"] if f["rule"] == "SL101")["evidence_events"][0]
    assert ev["kind"] == "recompile" and ev["shape"]["batch"] == 17
    assert "unpredicted" in doc


def test_cli_run_max_compiles_budget_fails(tmp_path, cases_root):
    case = os.path.join(cases_root, "a20_rnn_loop_over_time")
    proc = subprocess.run([sys.executable, "-m", "shapelint.cli", "run", "--model", "model.py:build",
                           "--inputs", "model.py:inputs", "--batch-sizes", "1,2,3", "--max-compiles", "2",
                           "--no-static", "--device", "cpu"], cwd=case, capture_output=True, text=True)
    # on CPU: under CUDA the cuDNN RNN has no fake-tensor kernel, Dynamo skips the frame and it
    # compiles twice only (seen on an H100)
    assert proc.returncode == 1
    assert "exceed max-compiles 2" in proc.stdout


def test_torch_trace_file_fallback(tmp_path, cases_root):
    """Events read from a TORCH_TRACE log equal what the live handler sees."""
    from shapelint.harness.trace import parse_trace_file

    case = os.path.join(cases_root, "a04_size_lt_threshold")
    code = ("import sys, importlib.util, torch; sys.path.insert(0, '.');"
            "s = importlib.util.spec_from_file_location('m', 'model.py'); m = importlib.util.module_from_spec(s);"
            "s.loader.exec_module(m); c = torch.compile(m.build(), backend='eager')\n"
            "for b in [1, 2, 3, 4, 8, 17]: c(*m.inputs(b))")
    env = dict(os.environ, TORCH_TRACE=str(tmp_path))
    subprocess.run([sys.executable, "-c", code], cwd=case, env=env, check=True, capture_output=True)
    (log,) = [p for p in tmp_path.iterdir() if p.name.startswith("dedicated_log_torch_trace")]
    collector = parse_trace_file(log.read_text().splitlines())
    kinds = [e["kind"] for e in collector.events]
    assert kinds.count("compilation_metrics") == 3
    reasons = [e for e in collector.events if e["kind"] == "artifact"
               and e["md"]["name"] == "recompile_reasons"]
    assert len(reasons) == 2 and "size mismatch" in reasons[0]["payload"]
    assert any(p.endswith("model.py") for p in collector.strings.values())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_graphs_recorded_per_shape(cases_root):
    # CUDA-graph trees warm up on a graph's first run and record on the next; under no_grad
    # (inference) a shape then only replays (measured on an H100 with torch 2.11)
    spec = case_spec(cases_root, "b03_neg_flatten_view", mode="reduce-overhead", device="cuda",
                     batch_sizes=[2, 2, 2, 2, 3, 3, 3, 3], dynamic="false", no_grad=True)
    res = run_target(spec)
    assert res.device == "cuda" and res.error is None, res
    rec = [r.cudagraph_recordings for r in res.per_shape]
    assert sum(rec[:4]) == 1 and sum(rec[4:]) == 1, rec  # one recording per shape
    assert rec[2:4] == [0, 0] and rec[6:8] == [0, 0], rec  # then replays


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_device_auto_places_model_on_cuda(cases_root):
    res = run_target(case_spec(cases_root, "a04_size_lt_threshold", device="auto"))
    assert res.device == "cuda" and res.compiles == 3
    assert any(r.line == 7 for r in res.of_kind("recompile"))


def test_falls_back_to_torch_trace_files(cases_root, monkeypatch):
    """Where the handler API is missing, the worker reads TORCH_TRACE logs; same answers."""
    monkeypatch.setenv("SHAPELINT_TRACE_SOURCE", "file")
    res = run_target(case_spec(cases_root, "a04_size_lt_threshold"))
    assert res.trace_source.startswith("TORCH_TRACE"), res.trace_source
    assert res.error is None and res.compiles == 3
    assert [r.new_compiles for r in res.per_shape] == [1, 1, 0, 0, 0, 1]
    assert any(r.line == 7 and r.shape["batch"] == 17 for r in res.of_kind("recompile"))


# ---------------------------------------------------------------------------------------------
# Issue 12: a harness you can gate CI on
# ---------------------------------------------------------------------------------------------

GATE = '''
import os, subprocess, sys, time
import torch
from torch import nn


class Plain(nn.Module):
    def forward(self, x):
        return x * 2


class LoopBreak(nn.Module):
    def forward(self, x):
        for _ in range(2):
            x = x + 1
            print("step")
        return x


class Hang(nn.Module):
    def forward(self, x):
        time.sleep(600)
        return x


def plain():
    return Plain()


def loop_break():
    return LoopBreak()


def spawner():
    """Starts a child and an orphaned grandchild, and says which."""
    child = subprocess.Popen(["sleep", "300"])
    grand = subprocess.run(["sh", "-c", "sleep 300 > /dev/null 2>&1 & echo $!"],
                           capture_output=True, text=True).stdout.strip()
    with open(os.environ["GATE_PIDS"], "w") as fh:
        fh.write(f"{child.pid} {grand}")
    return Plain()


def hang():
    with open(os.environ["GATE_PIDS"], "w") as fh:
        fh.write(str(os.getpid()))
    return Hang()


def inputs(batch):
    return (torch.ones(batch, 4),)
'''

GATE_TARGETS = """
[[targets]]
name = "limit"
model = "gate.py:plain"
inputs = "gate.py:inputs"
batch-sizes = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
dynamic = "false"

[[targets]]
name = "loop-break"
model = "gate.py:loop_break"
inputs = "gate.py:inputs"
batch-sizes = [1, 2]

[[targets]]
name = "spawner"
model = "gate.py:spawner"
inputs = "gate.py:inputs"
batch-sizes = [1, 2]
"""


def shapelint(cwd, *args, env=None, timeout=600):
    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "shapelint.cli", *args], cwd=str(cwd),
                          capture_output=True, text=True, env=full, timeout=timeout)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _stable(doc):
    """A JSON report without what differs between two runs of the same targets (timings)."""
    for t in doc.get("targets", []):
        t.pop("seconds", None)
        for row in t["per_shape"]:
            row.pop("seconds", None)
    return doc


@pytest.fixture(scope="module")
def gate_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    write_tree(root, {"gate.py": GATE, "shapelint.toml": GATE_TARGETS})
    tmp = root / "tmp"
    tmp.mkdir()
    pids = root / "pids"
    env = {"TMPDIR": str(tmp), "GATE_PIDS": str(pids)}
    two = shapelint(root, "run", "-j", "2", "--no-cache", "--format", "json", "-o", "two.json", env=env)
    spawned = [int(p) for p in pids.read_text().split()]
    left = sorted(os.listdir(str(tmp)))
    one = shapelint(root, "run", "-j", "1", "--no-cache", "--format", "json", "-o", "one.json", env=env)
    text = shapelint(root, "report", "one.json")
    return {"root": root, "two": two, "one": one, "text": text, "spawned": spawned, "left": left,
            "doc": json.loads((root / "one.json").read_text()),
            "doc2": json.loads((root / "two.json").read_text())}


def test_recompile_limit_fails_the_run_with_its_line(gate_runs):
    assert gate_runs["one"].returncode == 1 and gate_runs["two"].returncode == 1
    targets = {t["name"]: t for t in gate_runs["doc"]["targets"]}
    limit = targets["limit"]
    assert limit["failed"] and any("recompile_limit (8)" in p and "gate.py:7" in p for p in limit["problems"])
    assert [r.get("eager", False) for r in limit["per_shape"]] == [False] * 8 + [True] * 4
    assert len([e for e in limit["events"] if e["kind"] == "recompile"]) == 8  # one per recompile
    assert all("dynamic=False" in e["reason"] for e in limit["events"] if e["kind"] == "recompile")
    text = gate_runs["text"].stdout
    assert "FELL BACK TO EAGER at batch=9" in text and "ran uncompiled (eager)" in text
    assert "All checks passed" not in text and "of 3 targets failed" in text


def test_unhandled_graph_break_fails_the_run(gate_runs):
    t = {t["name"]: t for t in gate_runs["doc"]["targets"]}["loop-break"]
    fallback = [e for e in t["events"] if e["kind"] == "fallback"]
    assert t["failed"] and fallback and fallback[0]["line"] == 15 and fallback[0]["detail"] == "unhandled-graph-break"


def test_targets_own_processes_do_not_outlive_the_run(gate_runs):
    assert gate_runs["spawned"] and not any(_alive(p) for p in gate_runs["spawned"])
    t = {t["name"]: t for t in gate_runs["doc"]["targets"]}["spawner"]
    assert not t["failed"], t


def test_nothing_left_in_the_temporary_folder(gate_runs):
    assert gate_runs["left"] == []


def test_jobs_give_the_same_report(gate_runs):
    assert _stable(gate_runs["doc"]) == _stable(gate_runs["doc2"])


def test_ctrl_c_reports_what_finished_and_stops_every_worker(tmp_path):
    write_tree(tmp_path, {"gate.py": GATE, "shapelint.toml": """
        [[targets]]
        name = "plain"
        model = "gate.py:plain"
        inputs = "gate.py:inputs"
        batch-sizes = [1, 2]

        [[targets]]
        name = "hang"
        model = "gate.py:hang"
        inputs = "gate.py:inputs"
        batch-sizes = [1]
        timeout = 500
        """})
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pids = tmp_path / "pids"
    env = dict(os.environ, TMPDIR=str(tmp), GATE_PIDS=str(pids))
    # as from a terminal: a background job of a non-interactive shell starts with SIGINT ignored
    proc = subprocess.Popen([sys.executable, "-m", "shapelint.cli", "run", "--no-cache"],
                            cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 400
    while not pids.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.5)
    assert pids.exists(), proc.communicate()
    worker = int(pids.read_text())
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "target plain:" in out and "interrupted: 1 of 2 target(s) finished" in err
    time.sleep(0.5)
    assert not _alive(worker)
    assert os.listdir(str(tmp)) == []


def test_no_static_reports_events_without_inventing_findings(tmp_path, cases_root):
    case = os.path.join(cases_root, "b57_warn_large_batch")
    proc = shapelint(case, "run", "--model", "model.py:build", "--inputs", "model.py:inputs",
                     "--batch-sizes", "1,2,17", "--no-static", "--format", "json", "-o",
                     str(tmp_path / "r.json"))
    doc = json.loads((tmp_path / "r.json").read_text())
    assert proc.returncode == 0, proc.stderr
    assert doc["findings"] == [] and doc["targets"][0]["events"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")
def test_device_cuda_without_cuda_says_so(tmp_path):
    write_tree(tmp_path, {"gate.py": GATE})
    proc = shapelint(tmp_path, "run", "--model", "gate.py:plain", "--inputs", "gate.py:inputs",
                     "--batch-sizes", "1", "--device", "cuda", "--no-static")
    assert proc.returncode == 1
    assert "device cuda requested but" in proc.stdout and "the factory failed" not in proc.stdout


BRANCHY = """
import torch


class Branchy(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:
            return x * 2
        return x + 1


def build():
    return Branchy()


def inputs(batch):
    return (torch.randn(batch, 4),)
"""


def test_fail_on_code_recompiles_gates_ci(tmp_path):
    # the marker's verdict on the command line: a size branch fails the run with its line,
    # torch's own steps (batch 2 turning dim 0 dynamic) do not, and without the gate it passes
    write_tree(tmp_path, {"m.py": BRANCHY})
    run = ["run", "--model", "m.py:build", "--inputs", "m.py:inputs", "--batch-sizes", "1,2,4",
           "--no-cache", "--format", "json", "-o", "r.json"]
    plain = shapelint(tmp_path, *run)
    assert plain.returncode == 0, plain.stderr
    gated = shapelint(tmp_path, *run, "--fail-on", "code-recompiles")
    assert gated.returncode == 1, gated.stderr
    (t,) = json.loads((tmp_path / "r.json").read_text())["targets"]
    assert t["problems"] == ["1 recompile(s) caused by the code at m.py:6 (--fail-on code-recompiles)"]


SEEN = """
import torch


class Seen(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = 0

    def forward(self, x):
        out = x * 2
        if self.seen < 3:
            self.seen = self.seen + 1
        return out


def build():
    return Seen()


def inputs(batch):
    return (torch.randn(batch, 4),)
"""


def test_module_state_guard_names_the_read_and_the_write(tmp_path):
    # torch guards `self.seen == 1` where forward reads it (line 11); the write an earlier
    # call ran (line 12) is what changed it, and the report names both
    write_tree(tmp_path, {"m.py": SEEN})
    res = run_target(TargetSpec(name="seen", model="m.py:build", inputs="m.py:inputs",
                                base_dir=str(tmp_path), batch_sizes=[2, 3, 4]))
    (ev,) = [e for e in res.of_kind("recompile") if e.detail == "value-guard"]
    assert (os.path.basename(ev.path), ev.line) == ("m.py", 11)
    assert [(os.path.basename(p.abspath), p.line, p.why) for p in ev.also] == \
        [("m.py", 12, "`self.seen` written here by an earlier call")]


def test_suggest_measures_remedies(tmp_path):
    write_tree(tmp_path, {"gate.py": GATE})
    proc = shapelint(tmp_path, "run", "--model", "gate.py:plain", "--inputs", "gate.py:inputs",
                     "--batch-sizes", "1,2,3", "--suggest", "--no-static", "--format", "json",
                     "-o", "r.json")
    assert proc.returncode == 0, proc.stderr
    (t,) = json.loads((tmp_path / "r.json").read_text())["targets"]
    remedies = {r["kind"]: r for r in t["remedies"]}
    assert {"mark-dynamic", "mark-unbacked", "dynamic-true"} <= set(remedies)
    assert all(r["before"]["compiles"] == 2 and isinstance(r["after"]["compiles"], int)
               for r in remedies.values())
    assert remedies["mark-unbacked"]["after"]["compiles"] == 1  # no 0/1 specialization
    assert remedies["mark-dynamic"]["code"].startswith("torch._dynamo.mark_dynamic(x, 0)")
    text = shapelint(tmp_path, "report", "r.json").stdout
    assert "remedy: `torch._dynamo.decorators.mark_unbacked(x, 0)" in text and "2 compiles -> 1 (measured, helps)" in text


LIB = '''
import torch


def route(x):
    if x.shape[0] > 4:
        return x * 2
    return x + 1


def cold(x):
    y = x + 0
    if y.shape[0] > 2:
        return y * 3
    return y
'''

LIB_USER = '''
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import sizelib  # noqa: E402


class M(nn.Module):
    def __init__(self, use_cold=False):
        super().__init__()
        self.use_cold = use_cold

    def forward(self, x):
        if self.use_cold:
            return sizelib.cold(x)
        return sizelib.route(x)


def build():
    return M()


def inputs(batch):
    return (torch.ones(batch, 4),)
'''


def test_library_code_is_joined_with_reached_lines(tmp_path):
    """A library outside the project (as site-packages is): its files that ran are checked,
    a hazard there is confirmed, one on a line the replay never reached is not-reached and
    shown only with --show-library; the report names them by their path inside the library
    and holds no absolute path."""
    write_tree(tmp_path, {"lib/sizelib.py": LIB, "proj/model.py": LIB_USER})
    (tmp_path / "proj" / ".git").mkdir()  # the project's root
    run = ["run", "--model", "model.py:build", "--inputs", "model.py:inputs", "--batch-sizes", "1,2,8",
           "--no-cache", "--format", "json", "-o", "r.json"]
    # SL101 is a preview rule: run keeps its confirmed findings; the not-reached one shows
    # only when the rule is on (--preview) and library findings are asked for
    for flags, shown in (([], False), (["--show-library"], False),
                         (["--show-library", "--preview"], True)):
        proc = shapelint(tmp_path / "proj", *run, *flags)
        assert proc.returncode == 0, proc.stderr
        text = (tmp_path / "proj" / "r.json").read_text()
        assert str(tmp_path) not in text
        doc = json.loads(text)
        status = {(f["path"], f["line"], f["rule"]): f["status"] for f in doc["findings"]}
        assert status[("sizelib.py", 5, "SL101")] == "confirmed"
        assert all(f["library"] for f in doc["findings"] if f["path"] == "sizelib.py")
        assert (status.get(("sizelib.py", 12, "SL101")) == "not-reached") is shown
        (t,) = doc["targets"]
        assert "sizelib.py" in t["executed"]


ACROSS_BREAK = '''
import torch


class M(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        w = x.shape[0] + 1
        print("break")
        y = x * 2
        z = torch.ones(w)
        return y.view(n, -1).sum() + n + z.sum()


def build():
    return M()


def inputs(batch):
    return (torch.randn(batch, 8),)
'''


@pytest.mark.skipif(tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 13),
                    reason="the worker re-checks int guards as torch 2.13 keeps them; torch 2.11 "
                           "(seen on an H100) gives torch's own failing guard only")
def test_every_failed_value_guard_is_blamed(tmp_path):
    """torch's reason names one failing guard per cache entry (`n == 1`, line 11); `w`
    crossed the same break and its guard `w == 2` (line 10) failed at the same call: the worker
    re-checks the entry's int guards and the recompile names both lines, torch's first."""
    write_tree(tmp_path, {"m.py": ACROSS_BREAK})
    res = run_target(TargetSpec(name="m", model="m.py:build", inputs="m.py:inputs",
                                base_dir=str(tmp_path), batch_sizes=[1, 2]))
    resumed = [e for e in res.of_kind("recompile") if "resume" in e.frame]
    assert len(resumed) == 1
    ev = resumed[0]
    assert ev.line == 11 and ev.reason.startswith("n == 1")  # torch's own stays the event's
    assert [(g.line, g.also) for g in ev.guards] == [(11, False), (10, True)]
    assert ("m.py", 10) in blamed(res, "recompile")


def test_ints_that_change_with_an_input_dim_are_not_blamed():
    """When torch's reason is an input whose dim changed (automatic dynamic: torch's own
    recompile), ints that crossed the break with it turn dynamic in the same recompile and cost
    nothing more: r23's line 63 (`seq_length` after the break) is a measured decoy."""
    base = os.path.join(os.path.dirname(__file__), "cases", "real",
                        "r23_bert_padding_check_int_across_break")
    res = run_target(TargetSpec(name="r23", model="model.py:build", inputs="model.py:inputs",
                                base_dir=base))
    assert ("model.py", 63) not in blamed(res, "recompile")


TRAINING_SIDE = '''
import torch


class M(torch.nn.Module):
    def forward(self, x):
        if self.training:
            x = x * int(x.sum())
        return x + 1


def build():
    return M()


def build_eval():
    return M().eval()


def inputs(batch):
    return (torch.ones(batch, 4),)
'''


def test_run_walks_the_side_of_self_training_the_model_was_compiled_in(tmp_path):
    """A factory that forgets `.eval()` compiles the training side: `shapelint run` reads the
    mode from the built model, so the static pass predicts (and torch confirms) the break
    there; an eval model's run does not report it; `module-mode` in the config wins."""
    write_tree(tmp_path, {"m.py": TRAINING_SIDE})
    run = ["run", "--inputs", "m.py:inputs", "--batch-sizes", "2,3", "--no-cache"]

    def report(factory):
        proc = shapelint(tmp_path, *run, "--model", f"m.py:{factory}", "--format", "json",
                         "-o", "r.json")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads((tmp_path / "r.json").read_text())
        return doc["targets"][0], {(f["line"], f["rule"]): f["status"] for f in doc["findings"]}

    target, status = report("build")
    assert target["module_mode"] == "train"
    assert status[(7, "SL202")] == "confirmed"
    target, status = report("build_eval")
    assert target["module_mode"] == "eval" and (7, "SL202") not in status
    assert "modules in training mode" in shapelint(tmp_path, *run, "--model", "m.py:build").stdout
    (tmp_path / "shapelint.toml").write_text('module-mode = "eval"\n')
    target, status = report("build")
    assert status.get((7, "SL202")) != "confirmed", status
