"""The zoo benchmark: torch judges the static pass on real library code.

    python bench/zoo.py fetch                       # pinned libraries into bench/_downloads
    python bench/zoo.py replay [--only NAME...] [-j 2] [--modes auto,true] [--force]
                               [--harness-ref REF]  # slow; results cached per model and mode
    python bench/zoo.py score [--verbose] [--rule SL101] [--skip-all] [--no-view]   # fast
    python bench/zoo.py targets                     # the zoo as [[targets]] tables

**replay** fetches transformers 5.23.0, diffusers 0.42.1 and timm 1.0.31 (and their runtime
dependencies, never torch) into ``bench/_downloads``, then replays every model of
``bench/zoo_models.py`` with shapelint's harness (``shapelint.harness.runner.run_target``: one
subprocess per target, backend eager, CPU, no_grad, seed 0) at its batch sizes and sequence
lengths, in both dynamic modes (``auto``, torch's default, and ``true``). Each target+mode is
stored in ``bench/_downloads/zoo/<name>.<mode>.json``: every event (kind, blamed file:line,
reason, failed guard, the shape that triggered it) and the lines the compiled region executed
(the harness's ``executed`` coverage). A stored result is reused while its entry's code and
target settings are unchanged; ``--force`` replays anyway; ``--harness-ref HEAD`` replays with
the committed harness instead of the working tree's. ``_replays.json`` logs each run's wall
time, the workers' CPU seconds and the load average.

**score** runs ``shapelint check --format json --no-cache`` over the library files the replays
executed (and any file an event blames), once with the default rules and once with
``--select ALL --preview``, under a generated config whose ``dynamic-dims`` declares, per argument name,
the dims the zoo varies (the union over the entries), and scores the findings:

- *Visible blamed lines*: lines of the three libraries torch blamed an event on (recompile,
  specialization, graph-break, compile-error). Not counted: recompiles with no line (automatic
  dynamic's ``size mismatch`` promotion of an input, duck sizing, the harness's own marking,
  stride guards of resumed frames), guards with an empty user stack (added by the backend),
  the implicit ``2 <= s`` guard of torch's 0/1 specialization (its line is only the first use
  of the size), guards torch adds itself while running an op (``TORCH_GUARDS``: CPU convolution
  backend and memory-format choices, blamed on the line that calls the convolution), benign
  specializations (of a dim that never varied), and lines outside the libraries (torch,
  ``bench/zoo_models.py``).
- *Matching*: a finding and a blamed line match when they sit in the same statement (for
  ``if``/``for``/``while``/``with``/``def``, its header): torch names a statement by the line of
  the instruction that guarded, a rule the line of the sub-expression it judges.
- **recall** = visible blamed lines a finding matches / visible blamed lines. A recompile whose
  guards failed at several lines is one event: when a finding matches one of its lines, its
  other lines count as matched too. Per kind: the same over that kind's lines. Per rule: the
  lines of the kinds the rule predicts (its ``evidence``) that a finding *of that rule* matches,
  over all lines of those kinds (a rule's share; shares of rules predicting one kind add up).
- **precision** = true / (true + false) over findings on executed lines (a line of the
  finding's statement ran in a replay). *True*: a visible blamed line matches it (for SL302,
  which sits on the write of module state while torch blames the read: also a value guard in
  the same file naming the attribute, as ``shapelint run`` confirms it). *False*: torch never
  blamed it, unless ``EXCUSES`` gives a written reason why this sweep cannot show it (excused
  findings are left out and printed per reason). Findings on lines no replay executed are
  neither (counted as ``not-run``).

``--verbose`` lists each false finding (file:line, rule, source) and each missed blamed line
(file:line, kind, reason, failed guard, shape, targets, source). The last line is
``TOTAL recall=R precision=P`` for the default rules.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DOWNLOADS = os.path.join(HERE, "_downloads")
LIBS = os.path.join(DOWNLOADS, "zoo-libs")
SITE = os.path.join(DOWNLOADS, "zoo-site")
RESULTS = os.path.join(DOWNLOADS, "zoo")

#: the libraries under test: installed with --no-deps, never committed
LIBRARIES = {"transformers": "5.23.0", "diffusers": "0.42.1", "timm": "1.0.31"}
#: their runtime dependencies (what their metadata requires, minus torch and torchvision), pinned
#: to the versions this bench was written against; installed into zoo-site, never into the venv
RUNTIME_DEPS = ["huggingface-hub==2.4.0", "numpy==2.4.6", "regex==2026.11.15",
                "tokenizers==0.23.3", "typer==0.29.2", "safetensors==0.8.0", "tqdm==4.70.1",
                "importlib-metadata==10.2.0", "requests==2.34.2", "Pillow==13.0.0",
                "filelock==4.2.12", "pyyaml==6.0.3", "packaging==26.3"]
#: unpacked wheels to copy instead of downloading (saves a minute; optional)
TREES = os.environ.get("SHAPELINT_ZOO_TREES", "/work/trees")
MODES = ("auto", "true")


# -- fetch ----------------------------------------------------------------------------------------
def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check", *args]
    print("zoo: " + " ".join(cmd[2:]), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)


def _installed_version(folder: str, pkg: str) -> Optional[str]:
    for info in glob.glob(os.path.join(folder, f"{pkg}-*.dist-info")):
        return os.path.basename(info)[len(pkg) + 1:-len(".dist-info")]
    return None


def fetch() -> None:
    """The pinned libraries into zoo-libs and their dependencies into zoo-site (idempotent)."""
    os.makedirs(LIBS, exist_ok=True)
    for pkg, version in LIBRARIES.items():
        if _installed_version(LIBS, pkg) == version and os.path.isdir(os.path.join(LIBS, pkg)):
            continue
        for stale in glob.glob(os.path.join(LIBS, f"{pkg}-*.dist-info")) + [os.path.join(LIBS, pkg)]:
            shutil.rmtree(stale, ignore_errors=True)
        tree = os.path.join(TREES, f"{pkg}-{version}")
        if os.path.isdir(os.path.join(tree, pkg)):  # an unpacked copy of the same wheel
            for part in os.listdir(tree):
                if part == pkg or part == f"{pkg}-{version}.dist-info":
                    shutil.copytree(os.path.join(tree, part), os.path.join(LIBS, part))
            print(f"zoo: {pkg} {version} copied from {tree}", file=sys.stderr)
        else:
            _pip("install", "--no-deps", "--only-binary=:all:", "--no-compile", "--target", LIBS,
                 f"{pkg}=={version}")
    marker = os.path.join(SITE, ".zoo-deps")
    wanted = "\n".join(RUNTIME_DEPS)
    try:
        with open(marker) as fh:
            done = fh.read() == wanted
    except OSError:
        done = False
    if not done:
        shutil.rmtree(SITE, ignore_errors=True)
        # dependencies resolved among themselves only; none of them requires torch
        _pip("install", "--only-binary=:all:", "--no-compile", "--target", SITE, *RUNTIME_DEPS)
        with open(marker, "w") as fh:
            fh.write(wanted)



# -- replay ---------------------------------------------------------------------------------------
def _zoo():
    sys.path.insert(0, HERE)
    import zoo_models

    return zoo_models


def _rel(path: Optional[str]) -> Optional[str]:
    """A path relative to the repository (stable across checkouts), or None."""
    if not path:
        return None
    ab = os.path.abspath(path)
    rel = os.path.relpath(ab, REPO)
    return ab if rel.startswith("..") else rel


def _harness_digest(root: str = REPO) -> str:
    """The harness's source: a result replayed by another harness is flagged by ``score``
    (``replay --force`` replays it); an edit there does not silently cost a 30-minute replay."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted(glob.glob(os.path.join(root, "shapelint", "harness", "*.py"))):
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


def _torch_version() -> str:
    try:
        import importlib.metadata as md

        return md.version("torch")
    except Exception:  # noqa: BLE001
        return "?"


def specs_for(entries, modes: Iterable[str]):
    from shapelint.harness.target import TargetSpec

    models = os.path.relpath(os.path.join(HERE, "zoo_models.py"), REPO)
    for e in entries:
        for mode in modes:
            yield e, mode, TargetSpec(
                name=f"{e.name}.{mode}", model=f"{models}:ZOO.{e.name}.build",
                inputs=f"{models}:ZOO.{e.name}.inputs", batch_sizes=list(e.batches),
                seq_lens=list(e.seqs) if e.seqs else None, dynamic=mode, backend="eager",
                device="cpu", no_grad=True, seed=0, timeout=e.timeout, base_dir=REPO)


#: the target settings the zoo sets (a stored result is reused while they and the entry's code
#: are the same)
SPEC_FIELDS = ("name", "model", "inputs", "batch_sizes", "seq_lens", "dynamic", "backend",
               "device", "no_grad", "seed", "timeout")


def fingerprint(e, spec) -> str:
    """What a stored result depends on: the entry's code, its target, the libraries, torch."""
    import hashlib
    import inspect

    fields = {k: getattr(spec, k) for k in SPEC_FIELDS}  # not to_json(): the harness adds keys
    parts = [json.dumps(fields, sort_keys=True), repr(e.dims),
             json.dumps(LIBRARIES, sort_keys=True), _torch_version()]
    for fn in (e.factory, e.make_inputs):
        try:
            parts.append(inspect.getsource(fn))
        except (OSError, TypeError):
            parts.append(repr(fn))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def result_path(name: str, mode: str) -> str:
    return os.path.join(RESULTS, f"{name}.{mode}.json")


def load_result(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


EVENT_KEYS = (("recompiles", "recompile"), ("specializations", "specialization"),
              ("graph_breaks", "graph-break"), ("compile_errors", "compile-error"))


def normalize(e, mode: str, spec, res: Dict[str, Any], fp: str) -> Dict[str, Any]:
    """The harness result, reduced to what scoring needs, paths relative to the repository."""
    events = []
    for key, kind in EVENT_KEYS:
        for ev in res.get(key, []):
            events.append({
                "kind": kind, "detail": ev.get("kind"), "path": _rel(ev.get("abspath") or ev.get("path")),
                "line": ev.get("line"), "reason": ev.get("reason") or ev.get("message"),
                "shape": ev.get("shape"), "guard": ev.get("guard"), "note": ev.get("note"),
                "registry_id": ev.get("registry_id"), "benign": ev.get("benign", False),
                "sources": ev.get("sources"), "compile_id": ev.get("compile_id")})
    executed = {_rel(p): ls for p, ls in (res.get("executed") or {}).items()}
    return {"name": e.name, "mode": mode, "lib": e.lib, "kind": e.kind, "dims": e.dims,
            "fingerprint": fp, "libraries": LIBRARIES, "torch_version": res.get("torch_version"),
            "spec": spec.to_json(), "seconds": res.get("seconds"), "compiles": res.get("compiles"),
            "error": res.get("error"), "problems": res.get("problems"),
            "per_shape": res.get("per_shape"), "frames": res.get("frames"), "events": events,
            "executed": executed, "finished": time.strftime("%Y-%m-%d %H:%M:%S")}


def _write_json(path: str, doc: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1, sort_keys=False)
    os.replace(tmp, path)


def pinned_harness(ref: str) -> str:
    """shapelint as committed at ``ref`` (``git archive``), for replays that must not see a
    harness being edited in the working tree: the workers import shapelint from there."""
    dest = os.path.join(DOWNLOADS, "zoo-harness")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    archive = subprocess.run(["git", "archive", ref, "shapelint", "rules"], cwd=REPO,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    return dest


def replay(only: List[str], jobs: int, modes: List[str], force: bool,
           harness_ref: Optional[str] = None) -> int:
    fetch()
    zm = _zoo()
    harness_root = REPO
    if harness_ref:
        harness_root = pinned_harness(harness_ref)
        sys.path.insert(0, harness_root)
        for mod in [m for m in sys.modules if m == "shapelint" or m.startswith("shapelint.")]:
            del sys.modules[mod]
    from shapelint.harness.runner import run_target

    if not os.path.abspath(sys.modules["shapelint.harness.runner"].__file__).startswith(harness_root):
        raise SystemExit(f"zoo: the harness was not imported from {harness_root}")

    entries = zm.ZOO.entries()
    if only:
        unknown = [n for n in only if not hasattr(zm.ZOO, n)]
        if unknown:
            print(f"zoo: unknown entries {', '.join(unknown)}; known: "
                  f"{', '.join(e.name for e in entries)}", file=sys.stderr)
            return 2
        entries = [e for e in entries if e.name in only]
    os.makedirs(RESULTS, exist_ok=True)
    if not only:  # results of entries the zoo no longer has
        names = {e.name for e in entries}
        for path in glob.glob(os.path.join(RESULTS, "*.json")):
            doc = os.path.basename(path)
            if not doc.startswith("_") and doc.rsplit(".", 2)[0] not in names:
                os.remove(path)
    harness = _harness_digest(harness_root)
    todo = []
    for e, mode, spec in specs_for(entries, modes):
        fp = fingerprint(e, spec)
        old = load_result(result_path(e.name, mode))
        if old and old.get("fingerprint") == fp and not force:
            print(f"zoo: {spec.name}: up to date ({old.get('seconds')} s, {old.get('compiles')} "
                  f"compiles)", file=sys.stderr)
            continue
        todo.append((e, mode, spec, fp, (old or {}).get("seconds") or 0))
    planned = len(entries) * len(modes)
    todo.sort(key=lambda t: -t[4])  # longest first packs the pool best
    started = time.time()
    loads: List[float] = []  # the machine's 1-minute load, sampled as targets finish
    import resource

    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    failed = []

    def one(item):
        e, mode, spec, fp, _ = item
        run_spec = spec
        if harness_ref:
            # the worker runs `python -m shapelint.harness.worker` in base_dir, whose shapelint
            # would shadow the pinned one: run it from the pinned copy, the model by its path
            import dataclasses

            run_spec = dataclasses.replace(
                spec, base_dir=harness_root, model=os.path.join(REPO, spec.model),
                inputs=os.path.join(REPO, spec.inputs))
        res = run_target(run_spec)
        doc = normalize(e, mode, spec, res, fp)
        doc["harness"] = harness
        doc["harness_ref"] = harness_ref or "working tree"
        loads.append(os.getloadavg()[0])
        _write_json(result_path(e.name, mode), doc)
        status = f"ERROR {doc['error']}" if doc["error"] else "ok"
        n_ev = sum(1 for ev in doc["events"] if ev["line"])
        print(f"zoo: {spec.name}: {doc['compiles']} compiles, {n_ev} events with a line, "
              f"{sum(len(v) for v in doc['executed'].values())} lines executed, "
              f"{doc['seconds']} s, {status}", file=sys.stderr, flush=True)
        if doc["error"]:
            failed.append(spec.name)
        return doc

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, todo))
    wall = round(time.time() - started, 1)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of every worker: what the replay costs whatever else runs on the machine
    cpu = round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 1)
    if todo:
        log = os.path.join(RESULTS, "_replays.json")
        runs = load_result(log) or []
        runs.append({"finished": time.strftime("%Y-%m-%d %H:%M:%S"), "wall_s": wall,
                     "cpu_s": cpu, "load_avg": round(sum(loads) / max(1, len(loads)), 1),
                     "harness_ref": harness_ref or "working tree",
                     "jobs": jobs, "cpus": os.cpu_count(), "targets": len(todo),
                     "target_seconds": round(sum((load_result(result_path(t[0].name, t[1])) or {})
                                                 .get("seconds") or 0 for t in todo), 1),
                     # every target of the zoo replayed in this run (none reused)
                     "complete": not only and set(modes) == set(MODES) and len(todo) == planned})
        _write_json(log, runs)
    print(f"zoo: replayed {len(todo)} target(s) in {wall} s with -j {jobs} ({cpu} CPU s)"
          + (f"; failed: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    return 0



# -- score ----------------------------------------------------------------------------------------
#: Why the sweep cannot show a finding. A finding on an executed line that torch never blamed is
#: false unless an entry here matches it: every key given must match, ``rule`` (a code),
#: ``at`` (``lib/path.py:line`` relative to bench/_downloads/zoo-libs, or a list of them; any line
#: of the finding)
#: and ``source`` (a regex searched in the finding's source line). Matched findings are left
#: out of precision and printed per reason. Each reason says what the zoo does not vary.
EXCUSES: List[Dict[str, Any]] = [
    {"rule": "SL106",
     "reason": "CPU convolution's batch < 16 guard: the zoo sweeps batches up to 8 (a batch of 16 "
               "would add a compile per convnet and mode), so the threshold is never crossed"},
    {"rule": "SL301",
     "reason": "int/bool arguments of an entry: the zoo never varies a Python scalar argument "
               "(only tensor dims), so no value guard on one can fail"},
    {"rule": "SL305",
     "reason": "a branch on whether a None-default argument holds a tensor: the zoo passes the "
               "same arguments at every shape (never a tensor one call and None the next)"},
    {"rule": "SL304",
     "reason": "a module global rebound with `global`: nothing in a replay rebinds it between "
               "calls"},
    {"source": r"dtype == torch\.float16",
     "reason": "a condition on the float16 dtype: the zoo runs float32 only, so what follows "
               "`dtype == torch.float16 and` never runs"},
    {"at": "timm/layers/patch_embed.py:124", "reason": "strict image size: the model asserts "
     "H == img_size on this line, so no entry that reaches it can vary H"},
    {"at": "timm/layers/patch_embed.py:125", "reason": "strict image size: the model asserts "
     "W == img_size on this line, so no entry that reaches it can vary W"},
    {"at": ["timm/layers/pos_embed.py:34", "timm/layers/pos_embed.py:35"],
     "reason": "shadowed: H and W are already specialized upstream by the f-string messages of "
               "patch_embed.py:129/133 (SL103, confirmed), so these size tests see constants; "
               "with those asserts removed torch blames pos_embed.py:34 (measured on "
               "timm_vit_dynamic, dynamic=True, sides 32/48/64)"},
    {"source": r"if crop_scale and ", "reason": "behind CrossViT's `crop_scale`, a setting the "
     "zoo leaves False: the size tests after `crop_scale and` never run"},
    {"at": "transformers/models/big_bird/modeling_big_bird.py:1669", "reason": "BigBirdModel."
     "forward runs eagerly: torch cannot resume from its graph break at line 1580 "
     "(`logger.warning`, \"Failed to handle graph break gracefully. Skipping the function\"), "
     "so nothing after it in that frame is guarded"},
    {"at": ["transformers/models/swin/modeling_swin.py:269",
            "transformers/models/swin/modeling_swin.py:272",
            "transformers/models/swin/modeling_swin.py:563"],
     "reason": "HF Swin replays at one resolution (each compile at a dynamic side took 100-300 s): "
               "its padding branches on the image side never flip"},
]

#: recompile kinds with a line a static pass can see; "size-one" (a size-1 input after a dynamic
#: compile) is torch's own 0/1 specialization: its line is only the first use of the size
VISIBLE_RECOMPILES = {"shape-guard", "value-guard"}
KINDS = ("recompile", "specialization", "graph-break", "compile-error")


def load_results() -> List[Dict[str, Any]]:
    """The stored replays of the entries the zoo has now (a removed entry's file is ignored)."""
    names = {e.name for e in _zoo().ZOO.entries()}
    out = []
    for path in sorted(glob.glob(os.path.join(RESULTS, "*.json"))):
        if os.path.basename(path).startswith("_"):
            continue
        doc = load_result(path)
        if doc and "events" in doc and doc.get("name") in names:
            out.append(doc)
    return out


def lib_root() -> str:
    return _rel(LIBS) + os.sep


#: Guards torch adds itself while running an op, not because of the user's Python: the harness
#: blames them on the line that called the op (``self.conv1(x)``), where no rule can see them.
#: Matched against the failed guard (re-evaluated by the harness); each pattern was traced to
#: the torch frame that adds it with TORCH_LOGS=+dynamic on torch 2.13, CPU.
TORCH_GUARDS: List[Tuple[str, str]] = [
    (r"<= 20480$", "CPU convolution backend choice: torch._C._select_conv_backend "
                   "(_subclasses/fake_impls.py, conv) compares the input's area with a constant"),
    (r"^s\d+(\*s\d+)* < 16$", "CPU convolution's batch < 16 guard (_subclasses/fake_impls.py, "
                              "conv); a 3-D UNet's conv sees batch x frames"),
    (r"^Eq\(\(\(\(s\d+ - 1\)//32\)\) \+ 1, 1\)$",
     "batch_norm's fake kernel (_subclasses/fake_impls.py, infer_size) tests whether the spatial "
     "size is at most 32"),
    (r"^Max\(1, \(s\d+//\d+\)\) >= Max\(1, \(s\d+//\d+\)\)",
     "the stride order of a convolution's output (_prims_common, __lt__) compares a derived "
     "size with 1"),
]


def torch_guard(ev: Dict[str, Any]) -> Optional[str]:
    guard = ev.get("guard") or ""
    for pattern, why in TORCH_GUARDS:
        if guard and re.search(pattern, guard):
            return why
    return None


def visible(ev: Dict[str, Any]) -> Optional[str]:
    """None when a static pass can see the event's line, else why not (see the docstring)."""
    if not ev.get("path") or not ev.get("line"):
        return f"no line ({ev.get('detail') or ev['kind']})"
    if not ev["path"].startswith(lib_root()):
        return "outside the libraries"
    if ev["kind"] == "recompile" and ev.get("detail") not in VISIBLE_RECOMPILES:
        return f"recompile ({ev.get('detail')})"
    if ev["kind"] == "recompile" and torch_guard(ev):
        return "torch's own guard (TORCH_GUARDS)"
    if ev["kind"] == "specialization" and ev.get("benign"):
        return "benign specialization (a dim that never varied)"
    return None


#: folders and files that hold one model each: a view of the libraries leaves out those no replay
#: executed (see build_view)
MODEL_CONTAINERS = ("transformers/models/", "diffusers/pipelines/", "diffusers/modular_pipelines/",
                    "diffusers/models/transformers/", "diffusers/models/unets/",
                    "diffusers/models/autoencoders/", "diffusers/models/controlnets/",
                    "diffusers/models/condition_embedders/", "diffusers/models/latent_upscaler/",
                    "timm/models/")


def _container(rel: str) -> Optional[str]:
    """The one-model folder or file ``rel`` (relative to zoo-libs) belongs to, if any."""
    for prefix in MODEL_CONTAINERS:
        if rel.startswith(prefix):
            head = rel[len(prefix):].split("/", 1)[0]
            if head in ("__init__.py",) or head.startswith("_"):
                return None  # the package's own init, timm's _builder.py and friends: shared
            return prefix + head
    return None


def build_view(keep: Set[str]) -> str:
    """A hard-linked copy of the libraries' Python files, minus every model folder or file
    (``MODEL_CONTAINERS``) that holds none of ``keep`` (paths relative to zoo-libs).

    Why: ``shapelint check FILES`` (explicit files, as pre-commit passes them) also walks every
    file under the project root that imports one of them, and every model of transformers
    imports modeling_utils: the check of 300 files became a check of all 5,000 (over two
    minutes). In the view the root holds the shared code (utilities, layers, attention,
    masking, the base classes) and the zoo's own models, so helpers resolve as in the full
    tree and the importers walked are only those. Findings are mapped back to zoo-libs.
    """
    view = os.path.join(DOWNLOADS, "zoo-view")
    shutil.rmtree(view, ignore_errors=True)
    wanted = {_container(k) for k in keep} - {None}
    for lib in LIBRARIES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(LIBS, lib)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for fn in filenames:
                if not fn.endswith(".py"):
                    continue
                src = os.path.join(dirpath, fn)
                rel = os.path.relpath(src, LIBS).replace(os.sep, "/")
                box = _container(rel)
                if box is not None and box not in wanted:
                    continue
                dst = os.path.join(view, rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                try:
                    os.link(src, dst)
                except OSError:
                    shutil.copy2(src, dst)
    return view


def config_text(results: List[Dict[str, Any]]) -> str:
    dims: Dict[str, Set[int]] = {}
    for r in results:
        for name, ds in (r.get("dims") or {}).items():
            dims.setdefault(name, set()).update(ds)
    body = ", ".join(f"{n} = [{', '.join(str(d) for d in sorted(ds))}]" for n, ds in sorted(dims.items()))
    return ("# generated by bench/zoo.py score: the dims the zoo varies, per forward argument\n"
            f"dynamic-dims = {{ {body} }}\n")


def run_check(files: List[str], config: str, select_all: bool, out: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "shapelint.cli", "check", "--config", config, "--format", "json",
           "--no-cache", "--exit-zero", "-j", "1", "-o", out]
    if select_all:
        cmd += ["--select", "ALL", "--preview"]  # every rule, preview ones too
    return subprocess.Popen(cmd + files, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def rules_info() -> Dict[str, Dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "shapelint.cli", "rule", "--all", "--format", "json"],
                          cwd=REPO, capture_output=True, text=True, check=True)
    return {r["code"]: r for r in json.loads(proc.stdout)}


def excuse(f: Dict[str, Any]) -> Optional[str]:
    where = f["path"][len(lib_root()):] if f["path"].startswith(lib_root()) else f["path"]
    source = f.get("source_line") or _source(f["path"], int(f["line"]))
    for ex in EXCUSES:
        if ex.get("rule") not in (None, f["rule"]):
            continue
        at = ex.get("at")
        places = [at] if isinstance(at, str) else at
        if places is not None and not set(places) & {f"{where}:{n}" for n in _lines(f)}:
            continue
        if ex.get("source") is not None and not re.search(ex["source"], source):
            continue
        return ex["reason"]
    return None


def _lines(f: Dict[str, Any]) -> range:
    return range(int(f["line"]), max(int(f.get("end_line") or 0), int(f["line"])) + 1)


STATE_ATTR = re.compile(r"`self\.(\w+)`")


def _state_confirmed(f: Dict[str, Any], value_guards: Dict[str, List[str]]) -> bool:
    """SL302 sits on a write of module state; torch blames the guard on the read. As in
    ``shapelint run`` (harness/join.py), a value guard in the same file naming it confirms it."""
    if f["rule"] != "SL302":
        return False
    m = STATE_ATTR.search(f.get("message") or "")
    if not m:
        return False
    attr = re.compile(r"\b" + re.escape(m.group(1)) + r"\b")
    return any(attr.search(reason or "") for reason in value_guards.get(f["path"], []))


def _source(path: str, line: int) -> str:
    import linecache

    return linecache.getline(os.path.join(REPO, path), line).strip()


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "n/a"


class Statements:
    """Line -> the span of the statement it belongs to (for ``if``/``for``/``while``/``with``/
    ``def``, the header). torch names a statement by the line of the instruction that guarded
    or broke, a rule by the line of the sub-expression it judges: on a statement spread over
    several lines the two differ, so findings and blamed lines are matched by statement."""

    def __init__(self) -> None:
        self._spans: Dict[str, Dict[int, Tuple[int, int]]] = {}

    def _build(self, path: str) -> Dict[int, Tuple[int, int]]:
        import ast

        spans: Dict[int, Tuple[int, int]] = {}
        try:
            with open(os.path.join(REPO, path), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
        except (OSError, SyntaxError, ValueError):
            return spans
        found: List[Tuple[int, int]] = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.stmt):
                continue
            start, end = node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                end = max(start, body[0].lineno - 1)  # the header only
            found.append((start, end))
        for start, end in sorted(found, key=lambda se: se[0] - se[1]):  # widest first
            for n in range(start, end + 1):
                spans[n] = (start, end)  # narrower statements overwrite wider ones
        return spans

    def span(self, path: str, line: int) -> Tuple[int, int]:
        if path not in self._spans:
            self._spans[path] = self._build(path)
        return self._spans[path].get(line, (line, line))


class Blamed:
    """The blamed lines a static pass can see, the statements they sit in, and the recompiles
    they belong to (a recompile whose guard failed at several lines is one event)."""

    def __init__(self, results: List[Dict[str, Any]], stmts: Statements) -> None:
        self.stmts = stmts
        self.lines: Dict[Tuple[str, int], List[Dict[str, Any]]] = {}
        self.hidden: Dict[str, int] = {}
        self.value_guards: Dict[str, List[str]] = {}
        self.by_stmt: Dict[Tuple[str, Tuple[int, int]], Set[Tuple[str, int]]] = {}
        self.groups: Dict[Tuple, Set[Tuple[str, int]]] = {}
        self.line_groups: Dict[Tuple[str, int], Set[Tuple]] = {}
        self.ungrouped: Set[Tuple[str, int]] = set()  # lines with an event of another kind
        for r in results:
            target = f"{r['name']}.{r['mode']}"
            for ev in r["events"]:
                why = visible(ev)
                if why:
                    self.hidden[why] = self.hidden.get(why, 0) + 1
                    continue
                key = (ev["path"], int(ev["line"]))
                self.lines.setdefault(key, []).append(dict(ev, target=target))
                self.by_stmt.setdefault((key[0], stmts.span(*key)), set()).add(key)
                if ev["kind"] == "recompile":
                    group = (target, json.dumps(ev.get("shape"), sort_keys=True),
                             ev.get("compile_id") or ev.get("reason"))
                    self.groups.setdefault(group, set()).add(key)
                    self.line_groups.setdefault(key, set()).add(group)
                else:
                    self.ungrouped.add(key)
                if ev.get("detail") == "value-guard":
                    self.value_guards.setdefault(ev["path"], []).append(ev.get("reason") or "")

    def under(self, f: Dict[str, Any]) -> Set[Tuple[str, int]]:
        """The blamed lines in the statements a finding covers."""
        out: Set[Tuple[str, int]] = set()
        for n in _lines(f):
            out |= self.by_stmt.get((f["path"], self.stmts.span(f["path"], n)), set())
        return out

    def covered(self, key: Tuple[str, int], direct: Dict[Tuple[str, int], Set[str]],
                rule: Optional[str] = None) -> bool:
        """Flagged itself, or (recompiles only) each recompile it belongs to is flagged at
        another of its lines: that recompile was predicted."""
        def hit(k: Tuple[str, int]) -> bool:
            rules = direct.get(k, ())
            return bool(rules) and (rule is None or rule in rules)

        if hit(key):
            return True
        if key in self.ungrouped or not self.line_groups.get(key):
            return False
        return all(any(hit(k) for k in self.groups[g] if k != key) for g in self.line_groups[key])


class Scored:
    """The findings of one static run, scored against the replays."""

    def __init__(self, findings, rules, executed: Dict[str, Set[int]], blamed: Blamed):
        self.rows: Dict[str, Dict[str, int]] = {}
        self.false: List[Tuple[Dict[str, Any], str]] = []
        self.excused: Dict[str, List[Dict[str, Any]]] = {}
        self.hit: Dict[Tuple[str, int], Set[str]] = {}  # blamed line -> rules flagging it
        for f in findings:
            info = rules.get(f["rule"], {})
            if info.get("runtime_only") or not info.get("evidence"):
                continue  # SL001 and runtime-only rules are not static predictions of events
            row = self.rows.setdefault(f["rule"], dict(findings=0, executed=0, true=0, false=0,
                                                         excused=0, not_executed=0))
            row["findings"] += 1
            under = blamed.under(f)
            for key in under:
                self.hit.setdefault(key, set()).add(f["rule"])
            ran = executed.get(f["path"], set())
            spans = {blamed.stmts.span(f["path"], n) for n in _lines(f)}
            if not any(n in ran for a, b in spans for n in range(a, b + 1)):
                row["not_executed"] += 1
                continue
            row["executed"] += 1
            if under or _state_confirmed(f, blamed.value_guards):
                row["true"] += 1
                continue
            why = excuse(f)
            if why:
                row["excused"] += 1
                self.excused.setdefault(why, []).append(f)
            else:
                row["false"] += 1
                self.false.append((f, f.get("source_line") or _source(f["path"], int(f["line"]))))

    def totals(self) -> Dict[str, int]:
        tot = dict(findings=0, executed=0, true=0, false=0, excused=0, not_executed=0)
        for row in self.rows.values():
            for k in tot:
                tot[k] += row[k]
        return tot


def score(verbose: bool, only_rule: Optional[str], skip_all: bool, use_view: bool = True) -> int:
    results = load_results()
    if not results:
        print("zoo: no replay results; run `python bench/zoo.py replay` first", file=sys.stderr)
        return 2
    root = lib_root()
    executed: Dict[str, Set[int]] = {}
    for r in results:
        for path, ls in r["executed"].items():
            if path and path.startswith(root):
                executed.setdefault(path, set()).update(ls)
    # blamed lines a static pass can see, with the events behind each
    blamed = Blamed(results, Statements())
    hidden = blamed.hidden
    files = sorted(set(executed) | {p for p, _ in blamed.lines})

    t0 = time.perf_counter()
    view = build_view({f[len(root):] for f in files}) if use_view else LIBS
    view_root = _rel(view) + os.sep
    config = os.path.join(view, "shapelint.toml")  # at the libraries' root: helpers resolve there
    with open(config, "w") as fh:
        fh.write(config_text(results))
    checked = [view_root + f[len(root):] for f in files]
    runs = {"default": run_check(checked, config, False, os.path.join(RESULTS, "_check_default.json"))}
    if not skip_all:
        runs["ALL"] = run_check(checked, config, True, os.path.join(RESULTS, "_check_all.json"))
    docs, seconds = {}, {}
    for label, proc in runs.items():
        _, err = proc.communicate()
        seconds[label] = round(time.perf_counter() - t0, 1)
        out = os.path.join(RESULTS, "_check_default.json" if label == "default" else "_check_all.json")
        doc = load_result(out)
        if proc.returncode not in (0, 1) or doc is None:
            print(f"zoo: shapelint check ({label}) failed with status {proc.returncode}:\n{err[-3000:]}",
                  file=sys.stderr)
            return 2
        docs[label] = doc
    rules = rules_info()

    # -- header ---------------------------------------------------------------------------------
    failed = [f"{r['name']}.{r['mode']} ({(r.get('error') or '')[:80]})" for r in results if r.get("error")]
    target_s = sum(r.get("seconds") or 0 for r in results)
    runs_log = load_result(os.path.join(RESULTS, "_replays.json")) or []
    full = [x for x in runs_log if x.get("complete")]
    models = sorted({r["name"] for r in results})
    print(f"zoo: {len(models)} models, {len(results)} replays (backend eager, cpu, dynamic "
          f"{'/'.join(sorted({r['mode'] for r in results}))}); "
          f"{len(failed)} failed" + (f": {'; '.join(failed)}" if failed else ""))
    line = f"replay time: {target_s:.0f} s summed over targets ({target_s / 2 / 60:.1f} min on 2 cores)"
    if full:
        last = full[-1]
        line += (f"; last full replay {last['wall_s']:.0f} s wall ({last['wall_s'] / 60:.1f} min) "
                 f"with -j {last['jobs']} on {last['cpus']} cpus")
        if last.get("cpu_s"):
            line += (f", {last['cpu_s']:.0f} CPU s ({last['cpu_s'] / 2 / 60:.1f} min on 2 free "
                     f"cores; load average {last.get('load_avg', 0):.1f})")
    print(line)
    stale = [r for r in results if r.get("harness") != _harness_digest()]
    if stale:
        refs: Dict[str, int] = {}
        for r in stale:
            ref = f"{r.get('harness_ref', '?')} ({r.get('harness', '?')})"
            refs[ref] = refs.get(ref, 0) + 1
        print(f"note: {len(stale)} replay(s) ran with a harness other than the working tree's: "
              + ", ".join(f"{n} with {ref}" for ref, n in refs.items())
              + "; `python bench/zoo.py replay --force` replays them with it")
    n_exec = sum(len(v) for v in executed.values())
    print(f"executed: {n_exec} lines in {len(executed)} library files; static pass over "
          f"{len(files)} files: " + ", ".join(f"{k} {v} s" for k, v in seconds.items()))
    by_kind: Dict[str, Set[Tuple[str, int]]] = {k: set() for k in KINDS}
    for key, evs in blamed.lines.items():
        for ev in evs:
            by_kind[ev["kind"]].add(key)
    print(f"blamed lines visible to a static pass: {len(blamed.lines)} ("
          + ", ".join(f"{k} {len(v)}" for k, v in by_kind.items()) + "); events not counted: "
          + ", ".join(f"{k} {v}" for k, v in sorted(hidden.items(), key=lambda kv: -kv[1])))

    status = 0
    for label in (["ALL"] if "ALL" in docs else []) + ["default"]:
        doc = docs[label]
        if doc.get("errors"):
            print(f"[{label}] {len(doc['errors'])} file error(s), e.g. {doc['errors'][0]}")
        findings = [dict(f, path=root + f["path"][len(view_root):])
                    if f["path"].startswith(view_root) else f
                    for f in doc["findings"] if f.get("path")]
        sc = Scored(findings, rules, executed, blamed)
        report(label, sc, rules, blamed, by_kind, verbose, only_rule)
    return status


def report(label: str, sc: Scored, rules, blamed: Blamed, by_kind, verbose: bool,
           only_rule: Optional[str]) -> None:
    print(f"\n== {'--select ALL' if label == 'ALL' else 'default rules'} ==")
    print(f"{'rule':6} {'name':28} {'findings':>8} {'not-run':>7} {'run':>5} {'true':>5} "
          f"{'false':>5} {'excused':>7}  {'precision':>9}  recall (blamed lines of its kinds)")
    for code in sorted(sc.rows):
        if only_rule and code != only_rule:
            continue
        row = sc.rows[code]
        kinds = rules.get(code, {}).get("evidence") or []
        pool = set().union(*[by_kind[k] for k in kinds if k in by_kind]) if kinds else set()
        got = sum(1 for key in pool if blamed.covered(key, sc.hit, code))
        print(f"{code:6} {rules.get(code, {}).get('name', '')[:28]:28} {row['findings']:8d} "
              f"{row['not_executed']:7d} {row['executed']:5d} {row['true']:5d} {row['false']:5d} "
              f"{row['excused']:7d}  {_ratio(row['true'], row['true'] + row['false']):>9}  "
              f"{_ratio(got, len(pool))} ({got}/{len(pool)} {'+'.join(kinds)})")
    for kind in KINDS:
        pool = by_kind[kind]
        got = sum(1 for key in pool if blamed.covered(key, sc.hit))
        print(f"  {kind:15} recall={_ratio(got, len(pool))} ({got}/{len(pool)} blamed lines)")
    for why, fs in sc.excused.items():
        if only_rule and not any(f["rule"] == only_rule for f in fs):
            continue
        print(f"  excused {len(fs)}: {why}")
    if verbose:
        false = [(f, src) for f, src in sc.false if not only_rule or f["rule"] == only_rule]
        print(f"\n-- false findings ({len(false)}): executed, never blamed --")
        for f, src in sorted(false, key=lambda x: (x[0]["path"], int(x[0]["line"]), x[0]["rule"])):
            print(f"{f['path'][len(lib_root()):]}:{f['line']} {f['rule']} | {src[:140]}")
        kinds = set(rules.get(only_rule, {}).get("evidence") or []) if only_rule else set(KINDS)
        missed = sorted((k, evs) for k, evs in blamed.lines.items()
                        if not blamed.covered(k, sc.hit, only_rule)
                        and any(ev["kind"] in kinds for ev in evs))
        print(f"\n-- missed blamed lines ({len(missed)}) --")
        for (path, line), evs in missed:
            ev = evs[0]
            targets = sorted({e["target"] for e in evs})
            detail = f"{ev['kind']}" + (f"/{ev['detail']}" if ev.get("detail") else "")
            guard = f" [guard {ev['guard'][:80]}]" if ev.get("guard") else ""
            also = sorted({k for g in blamed.line_groups.get((path, line), ()) for k in blamed.groups[g]}
                          - {(path, line)})
            print(f"{path[len(lib_root()):]}:{line} {detail} | {(ev.get('reason') or '')[:120]}{guard} | "
                  f"at {ev.get('shape')} in {', '.join(targets[:4])}{' ...' if len(targets) > 4 else ''}"
                  f"\n    | {_source(path, line)[:140]}"
                  + (f"\n    (the same recompile is also blamed on "
                     f"{', '.join(f'{p[len(lib_root()):]}:{n}' for p, n in also[:3])})" if also else ""))
    tot = sc.totals()
    got = sum(1 for key in blamed.lines if blamed.covered(key, sc.hit))
    print(f"{'TOTAL' if label == 'default' else 'TOTAL(ALL)'} recall={_ratio(got, len(blamed.lines))} "
          f"precision={_ratio(tot['true'], tot['true'] + tot['false'])}")


def targets(modes: List[str]) -> int:
    """The zoo as ``[[targets]]`` tables, for ``shapelint run`` from the repository root."""
    zm = _zoo()
    for e, mode, spec in specs_for(zm.ZOO.entries(), modes):
        print(f"[[targets]]  # {e.lib}: {e.kind}")
        print(f'name = "{spec.name}"\nmodel = "{spec.model}"\ninputs = "{spec.inputs}"')
        print(f"batch-sizes = {spec.batch_sizes}")
        if spec.seq_lens:
            print(f"seq-lens = {spec.seq_lens}")
        print(f'dynamic = "{mode}"\nbackend = "eager"\ndevice = "cpu"\nno-grad = true\nseed = 0\n'
              f"timeout = {int(spec.timeout)}\n")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="bench/zoo.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="download the pinned libraries into bench/_downloads")
    r = sub.add_parser("replay", help="replay the zoo under torch.compile (slow; cached)")
    r.add_argument("--only", nargs="+", default=[], metavar="NAME")
    r.add_argument("-j", "--jobs", type=int, default=2)
    r.add_argument("--modes", default=",".join(MODES), help="dynamic modes (default auto,true)")
    r.add_argument("--force", action="store_true", help="replay even up-to-date results")
    r.add_argument("--harness-ref", metavar="REF",
                   help="replay with the harness as committed at REF (e.g. HEAD), not the "
                        "working tree's (which someone may be editing)")
    sc = sub.add_parser("score", help="score the static pass against the stored replays (fast)")
    sc.add_argument("--verbose", "-v", action="store_true",
                    help="list each false finding and each missed blamed line")
    sc.add_argument("--rule", help="only this rule's row and listings (e.g. SL101)")
    sc.add_argument("--skip-all", action="store_true", help="score the default rules only")
    sc.add_argument("--no-view", action="store_true",
                    help="check the files in the full library trees, not the view (slower; "
                         "for checking that the view changes no finding)")
    t = sub.add_parser("targets", help="print the zoo as [[targets]] tables")
    t.add_argument("--modes", default=",".join(MODES))
    args = p.parse_args(argv)
    if args.command == "fetch":
        fetch()
        return 0
    if args.command == "replay":
        modes = [m for m in args.modes.split(",") if m]
        return replay(args.only, args.jobs, modes, args.force, args.harness_ref)
    if args.command == "score":
        return score(args.verbose, args.rule, args.skip_all, not args.no_view)
    if args.command == "targets":
        return targets([m for m in args.modes.split(",") if m])
    return 2


if __name__ == "__main__":
    sys.exit(main())
