"""The pytest plugin's blame on users' own models around library code (issue 20 item 1).

For a few of the models of this folder, the ``compile_watch`` fixture (in this process) and
the ``no_recompiles`` marker's replay (``shapelint.testing.assert_no_recompiles``, what the marker
calls) must name the lines torch itself guards, as measured in each model's measured.json
(``tests/user_models/measure.py``, dynamic=None as torch.compile's default). The comparison is
bench/user_models.py's: per recompile (by compile id) the model-file lines of every failed
guard, no library line where torch names a user line, no size-1 (0/1) specialization claimed
where torch's range guard was not on a size 0 or 1.

A model on which shapelint blames another line today is ``xfail(strict=True)`` with what it
blames instead: the test flips to a failure (XPASS) once the harness is fixed, and the mark goes.
Slow: each test compiles a tiny library model at 10-12 shapes (about 30-60 s on 2 cores).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

pytestmark = pytest.mark.slow
pytest.importorskip("torch")
if not os.path.isdir(os.path.join(REPO, "bench", "_downloads", "zoo-libs", "transformers")):
    pytest.skip("the user models need transformers, diffusers and timm in bench/_downloads "
                "(python bench/zoo.py fetch)", allow_module_level=True)


def _bench():
    spec = importlib.util.spec_from_file_location("bench_user_models", os.path.join(REPO, "bench", "user_models.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _measured(name, mode="auto"):
    with open(os.path.join(HERE, name, "measured.json")) as fh:
        return json.load(fh)["modes"][mode]


def _module(name):
    spec = importlib.util.spec_from_file_location(f"user_model_{name}", os.path.join(HERE, name, "model.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _describe(row):
    out = []
    for e in row["events"]:
        if e.get("problem"):
            where = "graph breaks" if e.get("graph_breaks") else f"{e['compile_id']} at {e.get('shape')}"
            out.append(f"{where}: torch {e['torch'] or '-'}, shapelint {e.get('shapelint') or '-'}"
                       f"{' + library ' + str(e['library']) if e.get('library') else ''} -> {e['problem']}")
    return "\n".join(out + row["problems"])


#: model -> why shapelint's blame differs from torch's today (None: it matches)
WATCH = {
    "bert_trim_branch": None,
    "llama_rope_cache": None,
    "whisper_pad_frames": None,
    "diffusers_block_window_mask": None,
}
MARKER = {
    "bert_trim_branch": None,
    "llama_rope_cache": None,
    "whisper_pad_frames": None,
    "diffusers_block_window_mask": None,
}


def _params(table):
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=why)) if why else name
            for name, why in table.items()]


@pytest.mark.parametrize("name", _params(WATCH))
def test_compile_watch_names_torchs_lines(name, compile_watch):
    import torch

    bench = _bench()
    mod = _module(name)
    batches, seqs = bench.replay(name)
    takes_seq = "seq_len" in inspect.signature(mod.inputs).parameters
    model = torch.compile(mod.build(), backend="eager")
    with compile_watch() as watch:
        for b in batches:
            for s in seqs or [None]:
                value = mod.inputs(b, seq_len=s) if takes_seq and s is not None else mod.inputs(b)
                if isinstance(value, dict):
                    model(**value)
                elif len(value) == 2 and isinstance(value[1], dict):
                    model(*value[0], **value[1])
                else:
                    model(*value)
    doc = {"targets": [{"compiles": watch.compiles, "events": [e.to_json() for e in watch.events]}]}
    row = bench.compare(name, "auto", _measured(name), doc)
    assert row["match"], f"compile_watch blames other lines than torch on {name}:\n{_describe(row)}"


@pytest.mark.parametrize("name", _params(MARKER))
def test_marker_names_torchs_lines(name):
    """What the ``no_recompiles`` marker reports: every line torch guards for a recompile the
    code caused is named in its message, no library file is named in its place, and no event
    of it is called a size-1 (0/1) specialization unless a size was 0 or 1."""
    from shapelint.testing import CompileAssertionError, assert_no_recompiles

    bench = _bench()
    batches, seqs = bench.replay(name)
    measured = _measured(name)
    ref = os.path.join(HERE, name, "model.py")
    try:
        assert_no_recompiles(f"{ref}:build", f"{ref}:inputs", batch_sizes=batches, seq_lens=seqs,
                             backend="eager", device="cpu", base_dir=REPO)
        message = ""
    except CompileAssertionError as exc:
        message = str(exc)
    want = {ln for r in measured["recompile_events"] for ln in r.get("named_lines", r["user_lines"])}
    model_dir = os.path.join(HERE, name)
    named, library = set(), set()
    for m in re.finditer(r"^\s+(\S+\.py):(\d+): ", message, re.M):
        path = os.path.abspath(os.path.join(REPO, m.group(1)))
        if path.startswith(model_dir + os.sep):
            named.add(f"{os.path.relpath(path, model_dir)}:{m.group(2)}")
        else:
            library.add(f"{os.path.basename(path)}:{m.group(2)}")
    size_one_torch = any(e.get("size_one") for r in measured["recompile_events"] for e in r["entries"])
    problems = []
    if want - named:
        problems.append(f"torch's lines not named: {sorted(want - named)}")
    if library:
        problems.append(f"library lines named: {sorted(library)}")
    if "size-1" in message and not size_one_torch:
        problems.append("a size-1 (0/1) specialization is claimed; torch saw no size 0 or 1 there")
    assert not problems, f"{name}: " + "; ".join(problems) + f"\n--- marker message ---\n{message}"
