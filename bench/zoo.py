"""The zoo benchmark: torch judges the static pass on real library code it was not tuned on.

    python bench/zoo.py fetch                 # pinned libraries into bench/_downloads
    python bench/zoo.py score [--split tune|held-out|all] [--json] [--verbose] [--rule SL101]
    python bench/zoo.py table                 # tune, held-out and all side by side (README)
    python bench/zoo.py replay [--lib L] [--only NAME...] [--limit N] [-j 1] [--force]
                               [--retry-failed] [--harness-ref REF] [--timeout 240]
    python bench/zoo.py probe [--lib L]       # build + eager probe only (fast; no compile)
    python bench/zoo.py status                # records per library: ok, failed, stale, missing
    python bench/zoo.py failed                # the models that failed, grouped (Markdown)

**The models** are built by ``bench/zoo_build.py`` from the pinned libraries (transformers
5.23.0, diffusers 0.42.1, timm 1.0.31; torchvision where it imports), mechanically: every
transformers architecture's base model from a shrunk default config, every timm family's
smallest model, every diffusers UNet/transformer/autoencoder/ControlNet class, torchvision's
builders. Nobody picks a model or writes its config; ``zoo_build.py``'s docstring gives the
rules (the catalogue, the shrink table, the inputs from the forward's signature, the sizes
an eager probe accepts, the order of the shapes).

**replay** (slow, hours on 2 cores; resumable) runs shapelint's harness
(``shapelint.harness.runner.run_target``: one subprocess per target, backend eager, CPU, no_grad,
seed 0) on each model over batch sizes 1, 2, 3, 4, 8, 16 and the probe's lengths or sides, in
both dynamic modes (``auto``, ``true``). The harness is never the working tree's: it is
imported from a ``git archive`` of a pinned commit (``bench/zoo_records/_harness.json``: the
commit and the digest of its ``shapelint/harness/*.py``; ``--harness-ref REF`` pins another).
Each model's compact record is written as soon as it finishes, to
``bench/zoo_records/<lib>/<name>.json`` (committed): its versions (record format, torch,
the libraries, the harness digest, the builder's version), the probe's plan, per mode the
events (kind, detail, every blamed place with its role, framework/benign flags, shape,
reason) and the library lines the compiled region executed (as ranges; paths relative to
``bench/_downloads/zoo-libs``). The workers find zoo-site's numpy before torch starts, as a
user's torch does (``NUMPY_PATH``; a record says which numpy). A model is replayed only when it
has no record or its record's versions differ from the current ones, or it was replayed
without numpy and executed a numpy call (``--force``: always; ``--retry-failed``: also the
ones that failed). A model that fails to build, probe or replay is recorded with its
error and the sweep goes on; a mode that times out (``--timeout`` s, default 240) keeps what
it measured.

**score** (minutes, from the committed records alone; never replays) refuses every record
whose versions are not the current ones (listed as ``stale``, never mixed in), runs the
working tree's static pass (``shapelint check --format json --no-cache --preview``: every
rule, the default settings, no ``dynamic-dims``) over the library files the replays executed or
blamed, and judges it. The totals count the default rules (what a user gets); ``rules`` judges
each rule, preview ones too (``default`` says which), so a preview rule can earn its way back:

- *precision*: every default-rule finding (of a rule that predicts a torch event: not SL001,
  not the runtime-only SL9xx) on a statement a replay executed is judged. It is *true* when a
  replay's event names a line of that statement: the event's own line, a failed guard's line,
  or a call in a value guard's stack (what ``shapelint run`` counts as ``confirmed``; for
  SL302, which sits on a write of module state, also a value guard in the same file naming the
  attribute), else *false*. Nothing is excused. Findings on statements no replay executed are
  *unjudged* (``--verbose`` lists each with its reason); ``judged_share`` = judged / all
  findings in the checked files.
- *recall*: the pool is every library line an event of kind recompile, specialization,
  graph-break or compile-error names as its own line or a failed guard's line, less these
  exclusions (each a flag or kind torch's harness sets, counted in the output): a call in a
  value guard's stack (the caller is not the cause); a guard torch adds in its own framework
  code (``framework``: CPU convolution's ``batch < 16``, kernel shape checks); a benign
  specialization (a size that never varied); a ``size-one`` recompile (torch's 0/1
  specialization: its line is only the first use of the size); an event whose place is
  outside the libraries (torch, the zoo's builder). *direct_recall*: the lines whose statement
  a finding covers. *recall* (grouped): also a line every recompile of which is covered at
  another of its lines (that recompile was predicted).

**The split**: each model is ``tune`` or ``held-out`` by the parity of the first byte of
sha256(name); a model cited as evidence anywhere (code, tests, commits, the old hand-picked
zoo) is listed in ``bench/zoo_records/_tune.txt`` and is ``tune`` whatever its hash.

``score --json`` prints one JSON object (keys: ``split``, ``models``, ``failed``, ``partial``,
``stale``, ``findings``, ``judged``, ``judged_share``, ``true``, ``false``, ``precision``,
``recall``, ``direct_recall``, ``recall_by_kind``, ``blamed_lines``, ``excluded``,
``unjudged``, ``rules``, ...).
"""

from __future__ import annotations

import argparse
import functools
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DOWNLOADS = os.path.join(HERE, "_downloads")
LIBS = os.path.join(DOWNLOADS, "zoo-libs")
SITE = os.path.join(DOWNLOADS, "zoo-site")
RECORDS = os.path.join(HERE, "zoo_records")
PIN_FILE = os.path.join(RECORDS, "_harness.json")
TUNE_FILE = os.path.join(RECORDS, "_tune.txt")
CATALOGUE_FILE = os.path.join(RECORDS, "_catalogue.json")
#: bump when the builder lists other names for the same libraries (2: transformers variants)
CATALOGUE_FORMAT = 9
PROBES = os.path.join(DOWNLOADS, "zoo-probe.jsonl")
WORK = os.path.join(DOWNLOADS, "zoo-work")

#: the libraries under test: installed with --no-deps, never committed
LIBRARIES = {"transformers": "5.23.0", "diffusers": "0.42.1", "timm": "1.0.31"}
#: their runtime dependencies (what their metadata requires, minus torch and torchvision), pinned
#: to the versions this bench was written against; installed into zoo-site, never into the venv
RUNTIME_DEPS = ["huggingface-hub==2.4.0", "numpy==2.4.6", "regex==2026.11.15",
                "tokenizers==0.23.3", "typer==0.29.2", "safetensors==0.8.0", "tqdm==4.70.1",
                "importlib-metadata==10.2.0", "requests==2.34.2", "Pillow==13.0.0",
                "filelock==4.2.12", "pyyaml==6.0.3", "packaging==26.3"]
#: torchvision's wheel, apart from zoo-libs (transformers would take it as importable; its
#: compiled ops do not load beside this torch: bench/zoo_build.py imports its Python only)
TV = os.path.join(DOWNLOADS, "zoo-tv")
TORCHVISION = "0.29.1"
#: unpacked wheels to copy instead of downloading (saves a minute; optional)
TREES = os.environ.get("SHAPELINT_ZOO_TREES", "/work/trees")
MODES = ("auto", "true")
#: what a record holds and how (bump when that changes: every record is then replayed)
RECORD_FORMAT = 1
KINDS = ("recompile", "specialization", "graph-break", "compile-error")


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
    if _installed_version(TV, "torchvision") != TORCHVISION:
        shutil.rmtree(TV, ignore_errors=True)
        _pip("install", "--no-deps", "--only-binary=:all:", "--no-compile", "--target", TV,
             f"torchvision=={TORCHVISION}")
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


# -- versions, split ------------------------------------------------------------------------------
def load_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def write_json(path: str, doc: Any, indent: Optional[int] = None) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=indent, separators=(",", ":") if indent is None else None,
                  sort_keys=False)
        fh.write("\n")
    os.replace(tmp, path)


def torch_version() -> str:
    try:
        import importlib.metadata as md

        return md.version("torch")
    except Exception:  # noqa: BLE001
        return "?"


def harness_digest(root: str) -> str:
    """The digest of a shapelint tree's ``shapelint/harness/*.py``."""
    h = hashlib.sha256()
    for f in sorted(glob.glob(os.path.join(root, "shapelint", "harness", "*.py"))):
        h.update(os.path.basename(f).encode() + b"\0")
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


#: the builder the probes and workers of this process use: a snapshot taken when a sweep
#: starts (``snapshot_builder``), so editing bench/zoo_build.py never changes a running sweep
BUILDER = os.path.join(HERE, "zoo_build.py")


def builder_file_digest() -> str:
    with open(BUILDER, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:16]


def snapshot_builder() -> None:
    global BUILDER
    with open(BUILDER, "rb") as fh:
        data = fh.read()
    dest = os.path.join(WORK, hashlib.sha256(data).hexdigest()[:16], "zoo_build.py")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if not os.path.exists(dest):
        with open(dest + ".tmp", "wb") as fh:
            fh.write(data)
        os.replace(dest + ".tmp", dest)
    BUILDER = dest
    os.environ["SHAPELINT_ZOO_BENCH"] = HERE  # where the snapshot finds bench/_downloads


def builder_version() -> int:
    sys.path.insert(0, HERE)
    try:
        import zoo_build
    finally:
        sys.path.remove(HERE)
    return zoo_build.BUILDER_VERSION


def current_versions(pin: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """What a record must have been replayed with to be scored (and not replayed again)."""
    pin = pin if pin is not None else (load_json(PIN_FILE) or {})
    return {"format": RECORD_FORMAT, "torch": torch_version(), "libraries": dict(LIBRARIES),
            "harness": pin.get("digest"), "builder": builder_version()}


#: a folder that holds only zoo-site's numpy, first on the replay workers' path: torch looks
#: for numpy once, at start-up, before the builder puts zoo-site on the path, and a torch that
#: found none breaks the graph at every ``np.`` call (no user's environment lacks numpy:
#: transformers requires it)
NUMPY_PATH = os.path.join(DOWNLOADS, "zoo-numpy")
_NUMPY_CALL = re.compile(r"\b(np|numpy)\.")


def numpy_on_worker_path() -> Optional[str]:
    """Link zoo-site's numpy into NUMPY_PATH, put it on PYTHONPATH (the workers inherit it)
    and return its version (None where zoo-site has no numpy)."""
    dist = sorted(glob.glob(os.path.join(SITE, "numpy-*.dist-info")))
    if not dist:
        return None
    os.makedirs(NUMPY_PATH, exist_ok=True)
    for src in [os.path.join(SITE, "numpy"), os.path.join(SITE, "numpy.libs"), dist[-1]]:
        dst = os.path.join(NUMPY_PATH, os.path.basename(src))
        if os.path.exists(src) and not os.path.lexists(dst):
            os.symlink(src, dst)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if NUMPY_PATH not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([NUMPY_PATH] + paths)
    return os.path.basename(dist[-1])[len("numpy-"):-len(".dist-info")]


def calls_numpy_without_it(rec: Dict[str, Any]) -> bool:
    """A record replayed before the workers had numpy whose replay executed a numpy call: its
    events at those calls are the missing numpy's, not the model's (replayed again)."""
    if rec.get("numpy") or rec.get("error"):
        return False
    for m in (rec.get("modes") or {}).values():
        for path, text in (m.get("executed") or {}).items():
            lines = library_lines(path)
            if any(0 < n <= len(lines) and _NUMPY_CALL.search(lines[n - 1])
                   for n in unranges(text)):
                return True
    return False


def library_lines(path: str) -> Tuple[str, ...]:
    """The lines of a library file (``path`` relative to zoo-libs)."""
    return _file_lines(os.path.join(LIBS, path))


@functools.lru_cache(maxsize=None)
def _file_lines(path: str) -> Tuple[str, ...]:
    try:
        with open(path, encoding="utf-8") as fh:
            return tuple(fh.read().split("\n"))
    except (OSError, UnicodeDecodeError):
        return ()


def is_current(rec: Dict[str, Any], versions: Dict[str, Any]) -> bool:
    """Whether a record may be scored and kept: the current versions, and no numpy call
    replayed without numpy."""
    return rec.get("versions") == versions and not calls_numpy_without_it(rec)


def forced_tune() -> Set[str]:
    out: Set[str] = set()
    try:
        with open(TUNE_FILE, encoding="utf-8") as fh:
            for line in fh:
                name = line.split("#", 1)[0].strip()
                if name:
                    out.add(name)
    except OSError:
        pass
    return out


def split_of(name: str, forced: Optional[Set[str]] = None) -> str:
    """``tune`` or ``held-out``: forced ``tune`` when cited as evidence, else by the parity of
    the first byte of sha256(name) (stable across machines, versions and catalogue changes)."""
    name = base_model(name)  # a variant replays the same code: the same half
    if name in (forced if forced is not None else forced_tune()):
        return "tune"
    return "tune" if hashlib.sha256(name.encode()).digest()[0] % 2 == 0 else "held-out"


def base_model(name: str) -> str:
    """The model a variant (``hf_mixtral__experts_eager``: one more setting) replays."""
    return name.partition("__")[0]


# -- the pinned harness ---------------------------------------------------------------------------
def pin_harness(ref: Optional[str]) -> Dict[str, Any]:
    """The commit whose harness replays: ``ref`` when given (then recorded as the pin), else
    the recorded pin, else HEAD. Its ``shapelint`` and ``rules`` are extracted with ``git
    archive`` under bench/_downloads/zoo-harness/<commit>."""
    pin = load_json(PIN_FILE) or {}
    if ref or not pin.get("commit"):
        commit = subprocess.run(["git", "rev-parse", ref or "HEAD"], cwd=REPO, capture_output=True,
                                text=True, check=True).stdout.strip()
    else:
        commit = pin["commit"]
    dest = os.path.join(DOWNLOADS, "zoo-harness", commit[:12])
    if not os.path.isfile(os.path.join(dest, "shapelint", "harness", "runner.py")):
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        archive = subprocess.run(["git", "archive", commit, "shapelint", "rules"], cwd=REPO,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    new = {"commit": commit, "digest": harness_digest(dest)}
    if new != {k: pin.get(k) for k in new}:
        new["pinned"] = time.strftime("%Y-%m-%d %H:%M:%S")
        write_json(PIN_FILE, new, indent=1)
        pin = new
    pin["root"] = dest
    return pin


def import_pinned_runner(root: str):
    sys.path.insert(0, root)
    for mod in [m for m in sys.modules if m == "shapelint" or m.startswith("shapelint.")]:
        del sys.modules[mod]
    from shapelint.harness import runner
    from shapelint.harness.target import TargetSpec

    if not os.path.abspath(runner.__file__).startswith(os.path.abspath(root)):
        raise SystemExit(f"zoo: the harness was not imported from {root}")
    return runner.run_target, TargetSpec


# -- records --------------------------------------------------------------------------------------
LIB_OF = {"hf": "transformers", "timm": "timm", "diffusers": "diffusers", "tv": "torchvision"}


def lib_of(name: str) -> str:
    return LIB_OF.get(name.split("_", 1)[0], "other")


def record_path(name: str) -> str:
    return os.path.join(RECORDS, lib_of(name), f"{name}.json")


def load_records(as_of: Optional[str] = None) -> List[Dict[str, Any]]:
    """The committed records; ``as_of``: only those finished by then ("2026-11-26 15:50"),
    so two versions of the static pass are compared on one set while a sweep adds more."""
    out = []
    for path in sorted(glob.glob(os.path.join(RECORDS, "*", "*.json"))):
        doc = load_json(path)
        if isinstance(doc, dict) and doc.get("name") and \
                (as_of is None or str(doc.get("finished") or "") <= as_of):
            out.append(doc)
    return out


def ranges(lines: Iterable[int]) -> str:
    """[1, 2, 3, 7, 9, 10] -> '1-3,7,9-10'."""
    out: List[str] = []
    xs = sorted(set(int(x) for x in lines))
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def unranges(text: str) -> Set[int]:
    out: Set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def lib_path(path: Optional[str]) -> Optional[str]:
    """A path relative to zoo-libs ('transformers/models/...'), or '~' + where it is outside."""
    if not path:
        return None
    ab = os.path.abspath(path)
    for root in (LIBS, TV):
        root = os.path.abspath(root) + os.sep
        if ab.startswith(root):
            return ab[len(root):].replace(os.sep, "/")
    m = re.search(r"[/\\](site-packages|dist-packages)[/\\](.*)$", ab)
    if m:
        return "~" + m.group(2).replace(os.sep, "/")
    return "~" + os.path.basename(ab)


def _shape_text(plan: Dict[str, Any], shape: Any) -> Optional[str]:
    """The harness's shape (batch 1, seq_len = plan index) as the real one."""
    if not isinstance(shape, dict) or shape.get("seq_len") is None:
        return None
    try:
        row = plan["shapes"][int(shape["seq_len"])]
    except (IndexError, KeyError, TypeError, ValueError):
        return None
    return f"b={row['batch']} " + " ".join(f"{k}={v}" for k, v in sorted(row["sizes"].items()))


def compact_event(ev: Dict[str, Any], plan: Dict[str, Any]) -> Dict[str, Any]:
    """An event of the harness (``Event.to_json``) as the record keeps it. ``at`` lists every
    blamed place: [path, line, role, detail, framework] with role ``own`` (the event's line),
    ``guard`` (a failed guard's), ``caller`` (a call in a value guard's stack)."""
    at: List[List[Any]] = []
    seen = set()

    def add(item: Dict[str, Any], role: str, detail: str, fw: bool) -> None:
        p, line = lib_path(item.get("abspath") or item.get("path")), item.get("line")
        if not p or not line or (p, int(line), role) in seen:
            return
        seen.add((p, int(line), role))
        at.append([p, int(line), role, detail or "", 1 if fw else 0])

    add(ev, "own", ev.get("detail") or "", bool(ev.get("framework")))
    own = {(a[0], a[1]) for a in at}
    for g in ev.get("guards") or []:
        if (lib_path(g.get("abspath") or g.get("path")), g.get("line")) in own:
            continue  # the guard torch's reason names is the event's own line
        add(g, "guard", g.get("detail") or "", bool(g.get("framework")))
    for c in ev.get("also") or []:
        add(c, "caller", c.get("detail") or "", bool(c.get("framework")))
    guard = next((g.get("guard") for g in ev.get("guards") or [] if g.get("guard")), None)
    out = {"kind": ev.get("kind"), "detail": ev.get("detail") or "", "at": at,
           "shape": _shape_text(plan, ev.get("shape")), "reason": (ev.get("reason") or "")[:160]}
    if ev.get("framework"):
        out["framework"] = 1
    if ev.get("benign"):
        out["benign"] = 1
    if guard:
        out["guard"] = guard[:120]
    if ev.get("registry_id"):
        out["registry_id"] = ev["registry_id"]
    if ev.get("compile_id"):
        out["compile_id"] = ev["compile_id"]
    if not at and ev.get("note"):
        out["note"] = ev["note"][:120]
    return out


def compact_mode(res: Dict[str, Any], plan: Dict[str, Any]) -> Dict[str, Any]:
    executed: Dict[str, str] = {}
    for p, ls in (res.get("executed") or {}).items():
        rel = lib_path(p)
        if rel and not rel.startswith("~") and ls:
            executed[rel] = ranges(ls)
    rows = res.get("per_shape") or []
    return {"seconds": res.get("seconds"), "compiles": res.get("compiles"),
            "error": res.get("error"), "problems": [p[:200] for p in res.get("problems") or []],
            "shapes_run": sum(1 for r in rows if not r.get("error")),
            "shapes_failed": sum(1 for r in rows if r.get("error")),
            "shape_errors": sorted({(r.get("error") or "")[:160] for r in rows if r.get("error")})[:3],
            # a benign specialization (a size or float that never varied) is neither judged nor
            # in the recall pool: counted, not kept
            "benign": sum(1 for ev in res.get("events") or []
                          if ev.get("kind") == "specialization" and ev.get("benign")),
            "events": [compact_event(ev, plan) for ev in res.get("events") or []
                       if not (ev.get("kind") == "specialization" and ev.get("benign"))],
            "executed": dict(sorted(executed.items()))}


# -- probe ----------------------------------------------------------------------------------------
def catalogue(refresh: bool = False) -> List[str]:
    """Every model name (bench/zoo_build.py ``catalogue``), kept in _catalogue.json with the
    library versions it was listed from."""
    doc = load_json(CATALOGUE_FILE) or {}
    if not refresh and doc.get("libraries") == LIBRARIES and doc.get("names") \
            and doc.get("format") == CATALOGUE_FORMAT:
        return list(doc["names"])
    names: List[str] = []
    for lib in ("transformers", "timm", "diffusers", "torchvision"):  # one process each: timm
        proc = subprocess.run([sys.executable, BUILDER, "list", "--lib", lib], cwd=REPO,  # and
                              capture_output=True, text=True)  # torchvision's imports differ
        if proc.returncode != 0:
            raise SystemExit(f"zoo: listing the {lib} catalogue failed:\n{proc.stderr[-3000:]}")
        names += [n for n in proc.stdout.split() if n]
    write_json(CATALOGUE_FILE, {"libraries": LIBRARIES, "format": CATALOGUE_FORMAT,
                                "names": names}, indent=0)
    return names


def load_probes() -> Dict[str, Dict[str, Any]]:
    out: Dict[str, Dict[str, Any]] = {}
    try:
        with open(PROBES, encoding="utf-8") as fh:
            for line in fh:
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                out[doc["name"]] = doc
    except OSError:
        pass
    return out


def run_probes(names: List[str], budget: int = 120, quiet: bool = False) -> Dict[str, Dict[str, Any]]:
    """Probe ``names`` (those without a current probe) in one process at a time; a process that
    dies is restarted after the model it died on, which is recorded as failed."""
    bv = builder_file_digest()
    have = load_probes()
    todo = [n for n in names if have.get(n, {}).get("builder_digest") != bv]
    while todo:
        cmd = [sys.executable, BUILDER, "probe", "-o", PROBES,
               "--budget", str(budget), *todo]
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate()
        done = load_probes()
        left = [n for n in todo if n not in done or done[n].get("builder_digest") != bv]
        if proc.returncode != 0 and left:
            dead = left[0]
            tail = [ln for ln in (err or "").strip().splitlines() if ln.strip()][-1:]
            with open(PROBES, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"name": dead, "builder_digest": bv, "ok": False,
                                     "error": f"probe: the process died (status {proc.returncode})"
                                              + (f": {tail[0][:200]}" if tail else "")}) + "\n")
            left = left[1:]
        if not quiet:
            print(f"zoo: probed {len(todo) - len(left)} model(s)", file=sys.stderr)
        todo = left
    return load_probes()


# -- replay ---------------------------------------------------------------------------------------
def interleave(names: List[str], seed: Optional[int] = None) -> List[str]:
    """The sweep's order: one model of each library in turn (catalogue order within one, or a
    random order drawn from ``seed``), so a slice of the sweep holds every library; with a seed
    a slice is a random sample of each library rather than its alphabetical head."""
    by_lib: Dict[str, List[str]] = {}
    for n in names:
        by_lib.setdefault(lib_of(n), []).append(n)
    if seed is not None:
        import random

        rng = random.Random(seed)
        for q in by_lib.values():
            rng.shuffle(q)
    out: List[str] = []
    queues = list(by_lib.values())
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


class Progress:
    def __init__(self, total: int) -> None:
        self.total, self.done, self.t0 = total, 0, time.time()
        self.lock = threading.Lock()

    def step(self, text: str) -> None:
        with self.lock:
            self.done += 1
            el = time.time() - self.t0
            eta = el / self.done * (self.total - self.done)
            width = 30
            fill = int(width * self.done / max(1, self.total))
            print(f"[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} "
                  f"{el / 60:.0f} min, ~{eta / 60:.0f} min left | {text}", file=sys.stderr,
                  flush=True)


def replay(libs: List[str], only: List[str], jobs: int, force: bool, retry_failed: bool,
           harness_ref: Optional[str], timeout: float, limit: Optional[int],
           modes: List[str], seed: Optional[int] = None) -> int:
    fetch()
    snapshot_builder()
    pin = pin_harness(harness_ref)
    versions = current_versions(pin)
    run_target, TargetSpec = import_pinned_runner(pin["root"])
    numpy_version = numpy_on_worker_path()
    names = catalogue()
    if only:
        unknown = [n for n in only if n not in names]
        if unknown:
            print(f"zoo: not in the catalogue: {', '.join(unknown)}", file=sys.stderr)
            return 2
        names = [n for n in names if n in only]
    if libs:
        names = [n for n in names if lib_of(n) in libs]
    names = interleave(names, seed)
    print(f"zoo: {len(names)} model(s) in the catalogue selection (harness {pin['commit'][:12]}, "
          f"digest {pin['digest']}; -j {jobs}; timeout {timeout:g} s a mode)", file=sys.stderr,
          flush=True)

    def needs(n: str, probes: Dict[str, Dict[str, Any]]) -> bool:
        rec = load_json(record_path(n))
        pr = probes.get(n, {})
        return bool(force or rec is None or not is_current(rec, versions)
                    or rec.get("recipe") != pr.get("recipe")
                    or (rec.get("probe") or {}).get("error") != pr.get("error")
                    or any(m not in (rec.get("modes") or {}) for m in modes if not rec.get("error"))
                    or (retry_failed and (rec.get("error") or any(
                        (x or {}).get("error") for x in (rec.get("modes") or {}).values()))))

    sys.path.insert(0, os.path.dirname(BUILDER))
    import zoo_build

    os.makedirs(zoo_build.PLANS, exist_ok=True)
    bar = Progress(limit or len(names))
    probes: Dict[str, Dict[str, Any]] = {}
    build = BUILDER

    def one(name: str) -> None:
        t0 = time.time()
        pr = probes.get(name) or {"ok": False, "error": "probe: no result"}
        rec: Dict[str, Any] = {"name": name, "lib": lib_of(name), "versions": versions,
                               "harness_commit": pin["commit"], "recipe": pr.get("recipe"),
                               "numpy": numpy_version,
                               "probe": {k: pr.get(k) for k in ("ok", "error", "class", "params",
                                                                "variant", "use", "levels")
                                         if pr.get(k) is not None},
                               "error": None, "modes": {}}
        if not pr.get("ok"):
            rec["error"] = pr.get("error") or "probe failed"
            write_json(record_path(name), rec)
            bar.step(f"{name}: FAILED {rec['error'][:100]}")
            return
        plan = {"use": pr["use"], "shapes": pr["shapes"], "variant": pr.get("variant")}
        write_json(zoo_build.plan_path(name), plan)
        old = load_json(record_path(name)) or {}
        for mode in modes:
            if not force and is_current(old, versions) and old.get("recipe") == rec["recipe"] \
                    and mode in (old.get("modes") or {}) \
                    and not (retry_failed and old["modes"][mode].get("error")):
                rec["modes"][mode] = old["modes"][mode]  # resumed: this mode is current
                continue
            spec = TargetSpec(name=f"{name}.{mode}", model=f"{build}:ZOO.{name}.build",
                              inputs=f"{build}:ZOO.{name}.inputs", batch_sizes=[1],
                              seq_lens=list(range(len(plan["shapes"]))), dynamic=mode,
                              backend="eager", device="cpu", no_grad=True, seed=0,
                              timeout=timeout, base_dir=pin["root"])
            res = run_target(spec)
            doc = res.to_json() if hasattr(res, "to_json") else dict(res)
            rec["modes"][mode] = compact_mode(doc, plan)
            rec["modes"][mode]["output_tail"] = (doc.get("output_tail") or "")[-300:] \
                if doc.get("error") else None
            if rec["modes"][mode]["output_tail"] is None:
                del rec["modes"][mode]["output_tail"]
            rec["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
            write_json(record_path(name), rec)  # each mode kept as soon as it is measured
            m = rec["modes"][mode]
            if m["shapes_run"] == 0 and m.get("error"):
                rec["error"] = f"replay ({mode}): {m['error'][:300]}"
                break  # the model does not build or run under the harness: no second mode
        write_json(record_path(name), rec)
        summary = ", ".join(f"{md}: {m['compiles']} compiles, {len(m['events'])} events"
                            + (f", ERROR {m['error'][:60]}" if m.get("error") else "")
                            for md, m in rec["modes"].items())
        bar.step(f"{name}: {summary} ({time.time() - t0:.0f} s)")

    done = 0
    # a current, complete record is kept without probing again (a builder change that must
    # replay it bumps BUILDER_VERSION, which is in the versions); the rest is probed a chunk at
    # a time in one process, the next chunk while the replays of this one run
    kept = [] if force or retry_failed else [n for n in names if current_record(n, versions, modes)]
    if not limit:
        bar.total -= len(kept)
    left = [n for n in names if n not in set(kept)]
    chunks = [left[i:i + PROBE_CHUNK] for i in range(0, len(left), PROBE_CHUNK)]
    with ThreadPoolExecutor(max_workers=1) as prober:
        ahead = prober.submit(run_probes, chunks[0], quiet=True) if chunks else None
        for k, part in enumerate(chunks):
            assert ahead is not None
            probes.update(ahead.result())
            ahead = prober.submit(run_probes, chunks[k + 1], quiet=True) \
                if k + 1 < len(chunks) else None
            todo = [n for n in part if needs(n, probes)]
            if not limit:
                bar.total -= len(part) - len(todo)  # current records: nothing to do
            if limit:
                todo = todo[:max(0, limit - done)]
            with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                list(pool.map(one, todo))
            done += len(todo)
            if limit and done >= limit:
                break
    print(f"zoo: replayed {done} model(s)", file=sys.stderr)
    return 0


PROBE_CHUNK = 20  # models probed in one process (no compile) ahead of their replays


def current_record(name: str, versions: Dict[str, Any], modes: List[str]) -> bool:
    """A record made with the current versions, that replayed and holds every mode."""
    rec = load_json(record_path(name))
    return bool(rec) and is_current(rec, versions) and not rec.get("error") \
        and all(m in (rec.get("modes") or {}) and not rec["modes"][m].get("error") for m in modes)


def probe_cmd(libs: List[str], only: List[str]) -> int:
    fetch()
    snapshot_builder()
    names = catalogue()
    if libs:
        names = [n for n in names if lib_of(n) in libs]
    if only:
        names = [n for n in names if n in only]
    probes = run_probes(names)
    ok = sum(1 for n in names if probes.get(n, {}).get("ok"))
    print(f"zoo: {ok} of {len(names)} models build and run eagerly")
    return 0


def status() -> int:
    versions = current_versions()
    names = catalogue()
    by_lib: Dict[str, Dict[str, int]] = {}
    for n in names:
        rec = load_json(record_path(n))
        row = by_lib.setdefault(lib_of(n), dict(catalogue=0, replayed=0, failed=0, stale=0,
                                                missing=0))
        row["catalogue"] += 1
        if rec is None:
            row["missing"] += 1
        elif not is_current(rec, versions):
            row["stale"] += 1
        elif rec.get("error"):
            row["failed"] += 1
        else:
            row["replayed"] += 1
    for lib, row in sorted(by_lib.items()):
        print(f"{lib:12} " + " ".join(f"{k}={v}" for k, v in row.items()))
    return 0


# -- score ----------------------------------------------------------------------------------------
#: folders and files that hold one model each: the view of the libraries leaves out those no
#: replay executed (see build_view)
MODEL_CONTAINERS = ("torchvision/models/", "transformers/models/", "diffusers/pipelines/", "diffusers/modular_pipelines/",
                    "diffusers/models/transformers/", "diffusers/models/unets/",
                    "diffusers/models/autoencoders/", "diffusers/models/controlnets/",
                    "diffusers/models/condition_embedders/", "diffusers/models/latent_upscaler/",
                    "timm/models/")


def _container(rel: str) -> Optional[str]:
    for prefix in MODEL_CONTAINERS:
        if rel.startswith(prefix):
            head = rel[len(prefix):].split("/", 1)[0]
            if head in ("__init__.py",) or head.startswith("_"):
                return None
            return prefix + head
    return None


def build_view(keep: Set[str]) -> str:
    """A hard-linked copy of the libraries' Python files minus every model folder or file
    (``MODEL_CONTAINERS``) that holds none of ``keep`` (paths relative to zoo-libs).

    ``shapelint check FILES`` also walks every file under the project root that imports one of
    them, and every transformers model imports modeling_utils: the view keeps the shared code
    (so helpers resolve as in the full tree) and only the zoo's executed models. Each call gets
    a folder of its own (the caller removes it): two scores run side by side (tune and
    held-out) must not rebuild or read each other's view."""
    view = tempfile.mkdtemp(prefix="zoo-view-", dir=DOWNLOADS)
    wanted = {_container(k) for k in keep} - {None}
    for lib in list(LIBRARIES) + ["torchvision"]:
        base = TV if lib == "torchvision" else LIBS
        for dirpath, dirnames, filenames in os.walk(os.path.join(base, lib)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for fn in filenames:
                if not fn.endswith(".py"):
                    continue
                src = os.path.join(dirpath, fn)
                rel = os.path.relpath(src, base).replace(os.sep, "/")
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


def static_root(ref: Optional[str]) -> str:
    """Where the static pass is imported from: the working tree, or a ``git archive`` of REF."""
    if not ref:
        return REPO
    commit = subprocess.run(["git", "rev-parse", ref], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    dest = os.path.join(DOWNLOADS, "zoo-static", commit[:12])
    if not os.path.isfile(os.path.join(dest, "shapelint", "rules", "__init__.py")):
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        archive = subprocess.run(["git", "archive", commit, "shapelint", "rules"], cwd=REPO,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
        # REF's rules as ``shapelint.rules`` inside REF's package: an editable install maps
        # that name to the working tree's rules/, which would judge REF's engine with today's
        # rules
        shutil.copytree(os.path.join(dest, "rules"), os.path.join(dest, "shapelint", "rules"))
    return dest


def run_check(files: List[str], view: str, root: str) -> Dict[str, Any]:
    """The static pass with the default rules and settings (an empty config at the view's root:
    the project root, so helpers resolve there)."""
    config = os.path.join(view, "shapelint.toml")
    with open(config, "w") as fh:
        fh.write("# bench/zoo.py score: the default rules and settings\n")
    out = os.path.join(view, "zoo-check.json")  # the view is this run's own folder
    env = dict(os.environ, PYTHONPATH=root)
    # every rule runs, preview ones too: each is judged per rule (how a preview rule earns its
    # way back), while the totals count the default rules only (what a user gets)
    cmd = [sys.executable, "-m", "shapelint.cli", "check", "--config", config, "--format", "json",
           "--no-cache", "--exit-zero", "--preview", "-o", out]
    proc = subprocess.run(cmd + files, cwd=root, capture_output=True, text=True, env=env)
    doc = load_json(out)
    if proc.returncode not in (0, 1) or doc is None:
        raise SystemExit(f"zoo: shapelint check failed with status {proc.returncode}:\n"
                         f"{proc.stderr[-3000:]}")
    return doc


def rules_info(root: str) -> Dict[str, Dict[str, Any]]:
    env = dict(os.environ, PYTHONPATH=root)
    proc = subprocess.run([sys.executable, "-m", "shapelint.cli", "rule", "--all", "--format", "json"],
                          cwd=root, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"zoo: shapelint rule --all failed:\n{proc.stderr[-2000:]}")
    return {r["code"]: r for r in json.loads(proc.stdout)}


class Statements:
    """Line -> the span of the statement it belongs to (for ``if``/``for``/``while``/``with``/
    ``def``, the header). torch names a statement by the line of the instruction that guarded
    or broke, a rule by the line of the sub-expression it judges: they are matched by
    statement."""

    def __init__(self) -> None:
        self._spans: Dict[str, Dict[int, Tuple[int, int]]] = {}

    def _build(self, path: str) -> Dict[int, Tuple[int, int]]:
        import ast

        spans: Dict[int, Tuple[int, int]] = {}
        try:
            with open(lib_file(path), encoding="utf-8") as fh:
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
                end = max(start, body[0].lineno - 1)
            found.append((start, end))
        for start, end in sorted(found, key=lambda se: se[0] - se[1]):  # widest first
            for n in range(start, end + 1):
                spans[n] = (start, end)
        return spans

    def span(self, path: str, line: int) -> Tuple[int, int]:
        if path not in self._spans:
            self._spans[path] = self._build(path)
        return self._spans[path].get(line, (line, line))

    def lines(self, path: str, first: int, last: int) -> Set[int]:
        out: Set[int] = set()
        for n in range(first, max(first, last) + 1):
            a, b = self.span(path, n)
            out.update(range(a, b + 1))
        return out


def lib_file(rel: str) -> str:
    """The file a record's path names (torchvision's lie in zoo-tv, the rest in zoo-libs)."""
    return os.path.join(TV if rel.startswith("torchvision/") else LIBS, rel)


def _source(path: str, line: int) -> str:
    import linecache

    return linecache.getline(lib_file(path), line).strip()


def recall_exclusion(ev: Dict[str, Any], place: List[Any]) -> Optional[str]:
    """Why a blamed place is not in the recall pool (None: it is). See the module docstring."""
    path, _line, role, detail, fw = place
    if ev.get("kind") not in KINDS:
        return f"kind {ev.get('kind')}"
    if role == "caller":
        return "a call in a value guard's stack"
    if path.startswith("~"):
        return "outside the libraries"
    if fw or ev.get("framework"):
        return "framework guard (torch's own code)"
    if ev.get("kind") == "specialization" and ev.get("benign"):
        return "benign specialization (a size that never varied)"
    if ev.get("kind") == "recompile" and (detail or ev.get("detail")) == "size-one":
        return "size-one recompile (0/1 specialization)"
    return None


def model_state(rec: Dict[str, Any]) -> Tuple[str, str]:
    """('replayed' | 'partial' | 'failed', why)."""
    if rec.get("error"):
        return "failed", rec["error"]
    modes = rec.get("modes") or {}
    if not modes or not any(m.get("shapes_run") for m in modes.values()):
        return "failed", next((m.get("error") for m in modes.values() if m.get("error")),
                              "no shape ran")
    errs = [f"{md}: {m['error']}" for md, m in modes.items() if m.get("error")]
    errs += [f"{md}: {m['shapes_failed']} shape(s) failed ({'; '.join(m.get('shape_errors') or [])})"
             for md, m in modes.items() if m.get("shapes_failed")]
    return ("partial", "; ".join(errs)[:300]) if errs else ("replayed", "")


_CHECKS: Dict[Tuple[str, Tuple[str, ...]], Tuple[Dict[str, Any], float]] = {}


def _checked(files: List[str], static_ref: Optional[str],
             keep: Set[str]) -> Tuple[Dict[str, Any], float, str]:
    """The static pass over ``files`` (relative to the libraries) in a view that keeps the
    model folders of ``keep``, and its seconds; a split scored after ``all`` in one process
    reuses all's pass (a file's findings depend on the view, not on which other files are
    named)."""
    root = static_root(static_ref)
    for (r, done), (doc, secs) in _CHECKS.items():
        if r == root and set(files) <= set(done):
            return doc, secs, root
    t0 = time.perf_counter()
    view = build_view(keep | set(files))
    try:
        doc = run_check([os.path.join(view, f) for f in files], view, root)
    finally:
        shutil.rmtree(view, ignore_errors=True)
    vroot = os.path.abspath(view) + os.sep
    for f in doc.get("findings", []):
        ab = os.path.abspath(os.path.join(root, f.get("path") or ""))
        f["path"] = ab[len(vroot):].replace(os.sep, "/") if ab.startswith(vroot) else None
    secs = round(time.perf_counter() - t0, 1)
    _CHECKS[(root, tuple(sorted(files)))] = (doc, secs)
    return doc, secs, root


def score_data(split: str, static_ref: Optional[str] = None,
               as_of: Optional[str] = None) -> Dict[str, Any]:
    versions = current_versions()
    forced = forced_tune()
    records = load_records(as_of)
    out: Dict[str, Any] = {"split": split, "versions": versions}
    stale, failed, partial, used = [], [], [], []
    # the view keeps every current record's model folders, whichever split is scored: a file of
    # one half imports models of the other (a split-only view gave other findings than ``all``)
    keep: Set[str] = set()
    for rec in records:
        current = is_current(rec, versions)
        if current:
            keep.update(path for m in (rec.get("modes") or {}).values()
                        for path in m.get("executed", {}))
        if split != "all" and split_of(rec["name"], forced) != split:
            continue
        if not current:
            stale.append({"name": rec["name"], "versions": rec.get("versions"),
                          "why": "versions" if rec.get("versions") != versions
                          else "a numpy call replayed without numpy"})
            continue
        state, why = model_state(rec)
        if state == "failed":
            failed.append({"name": rec["name"], "error": why})
            continue
        if state == "partial":
            partial.append({"name": rec["name"], "error": why})
        used.append(rec)
    # a model counts once however many variants of it replayed
    out.update(models=len({base_model(r["name"]) for r in used}),
               variants=sum(1 for r in used if base_model(r["name"]) != r["name"]),
               failed=failed, partial=partial, stale=stale)
    stmts = Statements()
    executed: Dict[str, Set[int]] = {}
    blame: Dict[str, Set[int]] = {}  # precision: every place any joinable event names
    state_guards: Dict[str, List[str]] = {}
    pool: Dict[Tuple[str, int], Set[str]] = {}  # recall: line -> kinds
    groups: List[Set[Tuple[str, int]]] = []  # recompiles: the pool lines of each
    line_groups: Dict[Tuple[str, int], List[int]] = {}
    excluded: Dict[str, int] = {}
    events_total = 0
    for rec in used:
        for mode, m in rec["modes"].items():
            for path, text in m.get("executed", {}).items():
                executed.setdefault(path, set()).update(unranges(text))
            if m.get("benign"):
                why = "benign specialization (a size that never varied)"
                excluded[why] = excluded.get(why, 0) + m["benign"]
                events_total += m["benign"]
            for ev in m.get("events", []):
                events_total += 1
                if ev.get("kind") == "fallback":
                    excluded["fallback (a consequence of another event)"] = \
                        excluded.get("fallback (a consequence of another event)", 0) + 1
                    continue
                if not ev.get("at"):
                    why = f"no line ({ev.get('detail') or ev.get('kind')})"
                    excluded[why] = excluded.get(why, 0) + 1
                    continue
                joinable = not (ev.get("kind") == "specialization" and ev.get("benign"))
                mine: Set[Tuple[str, int]] = set()
                for place in ev["at"]:
                    path, line = place[0], int(place[1])
                    if joinable and not path.startswith("~"):
                        blame.setdefault(path, set()).add(line)
                        if ev.get("kind") == "recompile" and place[3] in ("value-guard", "attribute",
                                                                          "attribute-write"):
                            state_guards.setdefault(path, []).append(ev.get("guard") or
                                                                     ev.get("reason") or "")
                    why = recall_exclusion(ev, place)
                    if why:
                        excluded[why] = excluded.get(why, 0) + 1
                        continue
                    pool.setdefault((path, line), set()).add(ev["kind"])
                    mine.add((path, line))
                if ev.get("kind") == "recompile" and mine:
                    groups.append(mine)
                    for key in mine:
                        line_groups.setdefault(key, []).append(len(groups) - 1)
    files = sorted(set(executed) | set(blame) | {p for p, _ in pool})
    out["events"] = events_total
    out["executed_lines"] = sum(len(v) for v in executed.values())
    out["files_checked"] = len(files)
    # -- the static pass --------------------------------------------------------------------------
    doc, out["check_seconds"], root = _checked(files, static_ref, keep)
    out["static"] = static_ref or "working tree"
    rules = rules_info(root)
    findings = [dict(f) for f in doc.get("findings", [])
                if f.get("path") and (f["path"] in executed or f["path"] in blame)]
    out["check_errors"] = len(doc.get("errors") or [])
    # -- precision --------------------------------------------------------------------------------
    per_rule: Dict[str, Dict[str, Any]] = {}
    unjudged: List[Dict[str, Any]] = []
    falses: List[Dict[str, Any]] = []
    trues: List[Dict[str, Any]] = []  # every rule's, on a line torch blamed
    falses_preview: List[Dict[str, Any]] = []  # the same for the preview rules
    flagged: Dict[Tuple[str, int], Set[str]] = {}  # statement lines a finding covers
    flagged_all: Dict[Tuple[str, int], Set[str]] = {}  # the same, preview rules' findings too
    n_true = n_false = 0
    everything = findings
    findings = [f for f in everything if rules.get(f["rule"], {}).get("status") != "preview"]
    for f in everything:
        code = f["rule"]
        row = per_rule.setdefault(code, {"true": 0, "false": 0, "unjudged": 0})
        info = rules.get(code, {})
        default = info.get("status") != "preview"
        row["default"] = default
        first = int(f["line"])
        last = max(int(f.get("end_line") or 0), first)
        lines = stmts.lines(f["path"], first, last)
        if info.get("runtime_only") or not info.get("evidence"):
            row["unjudged"] += 1
            unjudged.append(dict(f, why="the rule predicts no torch event", default=default))
            continue
        for n in lines:
            flagged_all.setdefault((f["path"], n), set()).add(code)
            if default:
                flagged.setdefault((f["path"], n), set()).add(code)
        ran = executed.get(f["path"], set())
        if not lines & ran:
            row["unjudged"] += 1
            why = ("no replay executed this statement" if f["path"] in executed
                   else "no replay executed this file (checked because an event blames it)")
            unjudged.append(dict(f, why=why, default=default))
            continue
        hit = bool(lines & blame.get(f["path"], set()))
        if not hit and code == "SL302":
            m = re.search(r"`self\.(\w+)`", f.get("message") or "")
            if m:
                attr = re.compile(r"\b" + re.escape(m.group(1)) + r"\b")
                hit = any(attr.search(g) for g in state_guards.get(f["path"], []))
        if hit:
            row["true"] += 1
            n_true += default
            trues.append(f)
        else:
            row["false"] += 1
            n_false += default
            (falses if default else falses_preview).append(f)
    for row in per_rule.values():
        j = row["true"] + row["false"]
        row["precision"] = round(row["true"] / j, 3) if j else None
    judged = n_true + n_false
    out.update(findings=len(findings), judged=judged,
               judged_share=round(judged / len(findings), 3) if findings else None,
               true=n_true, false=n_false,
               precision=round(n_true / judged, 3) if judged else None)
    reasons: Dict[str, int] = {}
    for f in unjudged:
        if not f["default"]:
            continue
        reasons[f["why"]] = reasons.get(f["why"], 0) + 1
    out["unjudged"] = reasons
    # -- recall -----------------------------------------------------------------------------------
    direct = {key for key in pool if key in flagged}

    def grouped(key: Tuple[str, int]) -> bool:
        if key in direct:
            return True
        gs = line_groups.get(key)
        if not gs or any(k != "recompile" for k in pool[key]):
            return False
        return all(any(k in direct for k in groups[g] if k != key) for g in gs)

    covered = {key for key in pool if grouped(key)}
    out["blamed_lines"] = len(pool)
    out["direct_recall"] = round(len(direct) / len(pool), 3) if pool else None
    out["recall"] = round(len(covered) / len(pool), 3) if pool else None
    out["direct_recall_with_preview"] = round(sum(1 for k in pool if k in flagged_all) / len(pool),
                                              3) if pool else None
    by_kind = {}
    for kind in KINDS:
        keys = [k for k, kinds in pool.items() if kind in kinds]
        by_kind[kind] = {"lines": len(keys), "direct": sum(1 for k in keys if k in direct),
                         "grouped": sum(1 for k in keys if k in covered)}
    out["recall_by_kind"] = by_kind
    out["excluded"] = dict(sorted(excluded.items(), key=lambda kv: -kv[1]))
    out["rules"] = dict(sorted(per_rule.items()))
    out["_falses"] = falses
    out["_trues"] = trues
    out["_falses_preview"] = falses_preview
    out["_unjudged"] = unjudged
    out["_missed"] = sorted(k for k in pool if k not in covered)
    out["_pool"] = pool
    return out


def print_score(d: Dict[str, Any], verbose: bool, only_rule: Optional[str]) -> None:
    print(f"zoo score, split {d['split']}: {d['models']} models replayed "
          f"({len(d['partial'])} of them in part; {d['variants']} variant replays besides), "
          f"{len(d['failed'])} failed, "
          f"{len(d['stale'])} stale records refused; {d['events']} events, "
          f"{d['executed_lines']} library lines executed; static pass ({d['static']}) over "
          f"{d['files_checked']} files in {d['check_seconds']} s")
    print(f"findings {d['findings']}, judged {d['judged']} (judged_share {d['judged_share']}), "
          f"true {d['true']}, false {d['false']}: precision {d['precision']}")
    print("unjudged: " + ", ".join(f"{v} {k}" for k, v in d["unjudged"].items()))
    print(f"blamed lines {d['blamed_lines']}: recall {d['recall']} (direct {d['direct_recall']}); "
          + ", ".join(f"{k} {v['grouped']}/{v['lines']} (direct {v['direct']})"
                      for k, v in d["recall_by_kind"].items()))
    print("not in the recall pool: " + ", ".join(f"{v} {k}" for k, v in d["excluded"].items()))
    print(f"{'rule':6} {'true':>5} {'false':>5} {'unjudged':>8} {'precision':>9}")
    for code, row in d["rules"].items():
        if only_rule and code != only_rule:
            continue
        print(f"{code:6} {row['true']:5d} {row['false']:5d} {row['unjudged']:8d} "
              f"{row['precision'] if row['precision'] is not None else 'n/a':>9}")
    if d["failed"]:
        print(f"failed ({len(d['failed'])}):")
        for x in d["failed"]:
            print(f"  {x['name']}: {x['error'][:160]}")
    if d["stale"]:
        print(f"stale ({len(d['stale'])}; `python bench/zoo.py replay` replays them): "
              + ", ".join(x["name"] for x in d["stale"][:20]) + (" ..." if len(d["stale"]) > 20 else ""))
    if verbose:
        falses = [f for f in d["_falses"] if not only_rule or f["rule"] == only_rule]
        tr = [f for f in d["_trues"] if not only_rule or f["rule"] == only_rule]
        print(f"\n-- true findings ({len(tr)}, preview rules' too): on a line torch blamed --")
        for f in sorted(tr, key=lambda f: (f["path"], int(f["line"]))):
            print(f"{f['path']}:{f['line']} {f['rule']} | {_source(f['path'], int(f['line']))[:140]}")
        print(f"\n-- false findings ({len(falses)}): executed, never blamed --")
        for f in sorted(falses, key=lambda f: (f["path"], int(f["line"]))):
            print(f"{f['path']}:{f['line']} {f['rule']} | {_source(f['path'], int(f['line']))[:140]}")
        pf = [f for f in d["_falses_preview"] if not only_rule or f["rule"] == only_rule]
        print(f"\n-- false findings of preview rules ({len(pf)}) --")
        for f in sorted(pf, key=lambda f: (f["path"], int(f["line"]))):
            print(f"{f['path']}:{f['line']} {f['rule']} | {_source(f['path'], int(f['line']))[:140]}")
        # the default rules' unless one rule is asked for (a preview rule's too)
        un = [f for f in d["_unjudged"]
              if (f["rule"] == only_rule if only_rule else f["default"])]
        print(f"\n-- unjudged findings ({len(un)}) --")
        for f in sorted(un, key=lambda f: (f["path"], int(f["line"]))):
            print(f"{f['path']}:{f['line']} {f['rule']} ({f['why']}) | "
                  f"{_source(f['path'], int(f['line']))[:120]}")
        print(f"\n-- missed blamed lines ({len(d['_missed'])}) --")
        for path, line in d["_missed"]:
            print(f"{path}:{line} {'/'.join(sorted(d['_pool'][(path, line)]))} | "
                  f"{_source(path, line)[:140]}")
    print(f"TOTAL recall={d['recall']} direct_recall={d['direct_recall']} "
          f"precision={d['precision']} judged_share={d['judged_share']}")


def public(d: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if not k.startswith("_")}


def score(split: str, as_json: bool, verbose: bool, only_rule: Optional[str],
          static_ref: Optional[str], as_of: Optional[str] = None) -> int:
    d = score_data(split, static_ref, as_of)
    if as_json:
        print(json.dumps(public(d), sort_keys=False))
    else:
        print_score(d, verbose, only_rule)
    return 0


def table(static_ref: Optional[str]) -> int:
    """tune, held-out and all side by side (one static pass), as the README shows them: the
    records finished when it starts, so a sweep running beside it cannot make the columns
    disagree."""
    splits = ("tune", "held-out", "all")
    as_of = time.strftime("%Y-%m-%d %H:%M:%S")
    cols = {s: score_data(s, static_ref, as_of) for s in ("all", "tune", "held-out")}

    def cell(d: Dict[str, Any], key: str) -> str:
        v = d[key]
        if key == "judged":
            return f"{v} ({d['judged_share']})"
        if key == "precision":
            return f"{v} ({d['true']} of {d['judged']})" if v is not None else "n/a"
        if key in ("recall", "direct_recall"):
            covered = "grouped" if key == "recall" else "direct"
            got = sum(k[covered] for k in d["recall_by_kind"].values())
            return f"{v} ({got} of {d['blamed_lines']})" if v is not None else "n/a"
        if key == "unjudged":
            return str(sum(v.values()))
        return str(len(v) if isinstance(v, list) else v)

    rows = [("models replayed", "models"), ("models that failed (`_failed.md`)", "failed"),
            ("default-rule findings in the checked files", "findings"),
            ("judged: on a statement a replay ran (judged_share)", "judged"),
            ("unjudged (statements no replay ran; `score -v` lists them)", "unjudged"),
            ("precision", "precision"), ("recall, grouped", "recall"),
            ("recall, direct", "direct_recall")]
    print("  | default rules, default settings | tune | held-out | all |")
    print("  |---|---|---|---|")
    for label, key in rows:
        print(f"  | {label} | " + " | ".join(cell(cols[s], key) for s in splits) + " |")
    codes = sorted({c for s in splits for c, r in cols[s]["rules"].items()
                    if r["true"] + r["false"]})
    for code in codes:  # every rule judged per rule, preview ones too (how they earn their way back)
        def rule_cell(d: Dict[str, Any]) -> str:
            r = d["rules"].get(code)
            judged = r["true"] + r["false"] if r else 0
            return f"{r['true']} of {judged}" if judged else "-"
        default = any(cols[s]["rules"].get(code, {}).get("default") for s in splits)
        print(f"  | {code} ({'default' if default else 'preview'}) right | "
              + " | ".join(rule_cell(cols[s]) for s in splits) + " |")
    a = cols["all"]
    print("\n  Not in the recall pool (all): " + ", ".join(f"{v} {k}" for k, v in a["excluded"].items())
          + ". Per rule (all): " + ", ".join(
              f"{c} {r['true']}/{r['true'] + r['false']}" for c, r in a["rules"].items()
              if r["true"] + r["false"]) + f". Static pass {a['check_seconds']} s over "
          f"{a['files_checked']} files.")
    total = len(load_json(CATALOGUE_FILE).get("names", [])) if load_json(CATALOGUE_FILE) else 0
    # a catalogue name is a model or one of its variants: each has one record, run or failed
    records = len(glob.glob(os.path.join(RECORDS, "*", "*.json")))
    print(f"\n  Records so far: {records} of the {total} catalogue names: {a['models']} models "
          f"ran (with {a['variants']} variant replays), {len(a['failed'])} replays failed "
          f"({time.strftime('%Y-%m-%d')}; `python bench/zoo.py status` says what is left); the "
          f"figures are regenerated by `python bench/zoo.py table`.")
    return 0


def error_class(error: str) -> str:
    """A failure's class: its stage and exception type ('build: ValueError', 'replay (auto):
    timed out', ...)."""
    m = re.match(r"^(build|forward|probe|replay \(\w+\)): (?:RuntimeError: no input set runs: "
                 r"(?:[\w+]+: )?)?(timed out|\w+(?:Error|Exception|Warning)?)", error or "")
    if not m:
        return (error or "?").split(":")[0][:40]
    stage = {"forward": "no input set an eager forward accepts"}.get(m.group(1), m.group(1))
    return f"{stage}: {m.group(2)}"


def failed_list() -> int:
    """Every model that could not be built or replayed, grouped by class, as Markdown (the
    README links to the committed copy, bench/zoo_records/_failed.md)."""
    versions = current_versions()
    forced = forced_tune()
    rows = []
    for rec in load_records():
        if not is_current(rec, versions):
            continue
        state, why = model_state(rec)
        if state == "failed":
            rows.append((error_class(why), rec["name"], why))
    groups: Dict[str, List[Tuple[str, str]]] = {}
    for cls, name, why in sorted(rows):
        groups.setdefault(cls, []).append((name, why))
    print(f"# Zoo models that could not be built or replayed ({len(rows)})\n")
    print("Written by `python bench/zoo.py failed` from the committed records; each line is the "
          "model, its split and its error.\n")
    for cls, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"## {cls} ({len(items)})\n")
        for name, why in items:
            print(f"- `{name}` ({split_of(name, forced)}): {why[:240].replace('|', '/')}")
        print()
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="bench/zoo.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="download the pinned libraries into bench/_downloads")
    r = sub.add_parser("replay", help="replay the zoo under torch.compile (slow; resumable)")
    r.add_argument("--lib", action="append", default=[],
                   choices=["transformers", "timm", "diffusers", "torchvision"])
    r.add_argument("--only", nargs="+", default=[], metavar="NAME")
    r.add_argument("--limit", type=int, help="replay at most N models (a slice)")
    r.add_argument("--seed", type=int, help="replay in a random order drawn from this seed, so an "
                                            "unfinished sweep is a random sample of each library")
    r.add_argument("-j", "--jobs", type=int, default=1)
    r.add_argument("--modes", default=",".join(MODES))
    r.add_argument("--force", action="store_true", help="replay even current records")
    r.add_argument("--retry-failed", action="store_true", help="replay failed models again")
    r.add_argument("--timeout", type=float, default=240.0, help="seconds a mode (default 240)")
    r.add_argument("--harness-ref", metavar="REF", help="pin the harness at REF (default: the "
                   "recorded pin, else HEAD)")
    pr = sub.add_parser("probe", help="build and eagerly probe models (no compile)")
    pr.add_argument("--lib", action="append", default=[])
    pr.add_argument("--only", nargs="+", default=[])
    sc = sub.add_parser("score", help="score the static pass against the records (minutes)")
    sc.add_argument("--split", default="all", choices=["tune", "held-out", "all"])
    sc.add_argument("--json", action="store_true", help="one JSON object")
    sc.add_argument("--verbose", "-v", action="store_true",
                    help="list each false finding, each unjudged finding and each missed line")
    sc.add_argument("--rule", help="only this rule's row and listings")
    sc.add_argument("--static-ref", metavar="REF",
                    help="the static pass as committed at REF, not the working tree's")
    sc.add_argument("--as-of", metavar="TIME",
                    help="only records finished by TIME ('2026-11-26 15:50'): compare two "
                         "static passes on one set while a sweep runs")
    tb = sub.add_parser("table", help="tune, held-out and all side by side")
    tb.add_argument("--static-ref", metavar="REF")
    sub.add_parser("status", help="records per library")
    sub.add_parser("failed", help="the models that failed, grouped, as Markdown")
    args = p.parse_args(argv)
    if args.command == "fetch":
        fetch()
        return 0
    if args.command == "replay":
        return replay(args.lib, args.only, args.jobs, args.force, args.retry_failed,
                      args.harness_ref, args.timeout, args.limit,
                      [m for m in args.modes.split(",") if m], args.seed)
    if args.command == "probe":
        return probe_cmd(args.lib, args.only)
    if args.command == "score":
        return score(args.split, args.json, args.verbose, args.rule, args.static_ref, args.as_of)
    if args.command == "table":
        return table(args.static_ref)
    if args.command == "status":
        return status()
    if args.command == "failed":
        return failed_list()
    return 2


if __name__ == "__main__":
    sys.exit(main())
