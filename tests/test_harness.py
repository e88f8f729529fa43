"""The dynamic harness on real torch.compile runs (backend eager, CPU): counts, blame, faults."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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


def blamed(result, key):
    return {(os.path.basename(e["path"]), e["line"]) for e in result[key] if e.get("path")}


def test_size_branch_recompile_is_blamed_on_its_line(cases_root):
    res = run_target(case_spec(cases_root, "a04_size_lt_threshold"))
    assert res["error"] is None and not res["failed"]
    assert res["compiles"] == 3
    assert [r["new_compiles"] for r in res["per_shape"]] == [1, 1, 0, 0, 0, 1]
    guard = [r for r in res["recompiles"] if r.get("line")]
    assert guard and guard[0]["shape"]["batch"] == 17 and guard[0]["line"] == 7
    assert guard[0]["kind"] == "shape-guard"
    promoted = [r for r in res["recompiles"] if r["kind"] == "input-dynamic"]
    assert promoted and promoted[0]["path"] is None  # automatic dynamic: no user line


def test_value_guard_uses_user_stack(cases_root):
    res = run_target(case_spec(cases_root, "a06_int_arg_used_then_compared"))
    assert res["compiles"] == 3
    assert ("model.py", 8) in blamed(res, "recompiles")


def test_graph_break_with_registry_id(cases_root):
    res = run_target(case_spec(cases_root, "b45_item_normalizer"))
    assert res["compiles"] == 4
    gb = res["graph_breaks"]
    assert [(os.path.basename(g["path"]), g["line"], g["registry_id"]) for g in gb] == [("model.py", 7, "GB0124")]


def test_helper_in_other_module(cases_root):
    res = run_target(case_spec(cases_root, "b53_helper_chain_modulo"))
    assert res["compiles"] == 3
    assert ("padutils.py", 10) in blamed(res, "recompiles")


def test_compile_error_is_reported_and_fails_the_target(cases_root):
    res = run_target(case_spec(cases_root, "b42_custom_op_no_fake"))
    assert res["failed"] and all(r["error"] for r in res["per_shape"])
    assert ("model.py", 17) in blamed(res, "compile_errors")


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
    assert res["failed"] and "model factory failed" in res["error"] and "cannot build" in res["error"]


def test_inputs_of_the_wrong_type(tmp_path):
    res = fault(tmp_path, "plain", inputs="wrong_inputs")
    assert res["failed"]
    assert all("inputs must return" in r["error"] for r in res["per_shape"])


def test_forward_that_raises_at_one_batch_only(tmp_path):
    res = fault(tmp_path, "flaky")
    errors = {r["batch"]: r["error"] for r in res["per_shape"]}
    assert errors[1] is None and errors[2] is None and errors[4] is None
    assert "bad batch" in errors[3]
    assert res["failed"] and res["compiles"] >= 2


def test_target_that_hangs_times_out_and_keeps_nothing_lost(tmp_path):
    res = fault(tmp_path, "hang", timeout=20)
    assert res["failed"] and "timed out" in res["error"]


def test_target_that_allocates_until_killed(tmp_path):
    res = fault(tmp_path, "hog", memory_limit_mb=6000, timeout=120)
    rows = {r["batch"]: r for r in res["per_shape"]}
    assert rows[1]["error"] is None and rows[2]["error"] is None  # finished shapes are kept
    assert "out of memory" in rows[3]["error"]


def test_target_that_crashes_the_interpreter(tmp_path):
    res = fault(tmp_path, "crash")
    assert res["failed"] and "crashed" in res["error"] and "aborted" in res["error"]
    assert [r["batch"] for r in res["per_shape"]] == [1]  # what finished before the crash


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
                "per_shape", "recompiles", "specializations", "graph_breaks", "error"):
        assert key in target
    assert target["compiles"] == 4 and target["device"] == "cpu"
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
                           "--no-static"], cwd=case, capture_output=True, text=True)
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
    assert res["device"] == "cuda" and res["error"] is None, res
    rec = [r["cudagraph_recordings"] for r in res["per_shape"]]
    assert sum(rec[:4]) == 1 and sum(rec[4:]) == 1, rec  # one recording per shape
    assert rec[2:4] == [0, 0] and rec[6:8] == [0, 0], rec  # then replays


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_device_auto_places_model_on_cuda(cases_root):
    res = run_target(case_spec(cases_root, "a04_size_lt_threshold", device="auto"))
    assert res["device"] == "cuda" and res["compiles"] == 3
    assert any(r.get("line") == 7 for r in res["recompiles"])


def test_falls_back_to_torch_trace_files(cases_root, monkeypatch):
    """Where the handler API is missing, the worker reads TORCH_TRACE logs; same answers."""
    monkeypatch.setenv("SHAPELINT_TRACE_SOURCE", "file")
    res = run_target(case_spec(cases_root, "a04_size_lt_threshold"))
    assert res["trace_source"].startswith("TORCH_TRACE"), res["trace_source"]
    assert res["error"] is None and res["compiles"] == 3
    assert [r["new_compiles"] for r in res["per_shape"]] == [1, 1, 0, 0, 0, 1]
    assert any(r.get("line") == 7 and r["shape"]["batch"] == 17 for r in res["recompiles"])
