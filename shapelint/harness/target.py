"""What to replay: a target's spec, and loading ``pkg.module:attr`` / ``path/file.py:attr``.

Loading runs the user's model code, so it happens only inside the worker subprocess.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from shapelint.finding import DynamicMode, Shape

DEFAULT_BATCHES = [1, 2, 3, 4, 8, 17]


class TargetError(Exception):
    """A target that cannot be described or loaded; reported per target."""


@dataclass
class TargetSpec:
    name: str
    model: str
    inputs: str
    batch_sizes: List[int] = field(default_factory=lambda: list(DEFAULT_BATCHES))
    seq_lens: Optional[List[int]] = None
    dynamic: str = "auto"  # auto | true | false | mark
    backend: str = "eager"
    device: str = "auto"
    mode: Optional[str] = None
    fullgraph: bool = False
    max_compiles: Optional[int] = None
    timeout: float = 300.0
    base_dir: str = "."
    check_paths: List[str] = field(default_factory=list)
    memory_limit_mb: Optional[int] = None
    no_grad: bool = False
    seed: Optional[int] = None
    #: with a seed: reseed before each shape's inputs (independent of the order tried), or
    #: seed once before building, as a plain script (and bench/measure_case.py) does
    seed_each_shape: bool = True
    #: measure remedies for the recompiles this target shows (``--suggest``, key ``suggest``)
    suggest: bool = False
    #: the remedy a replay applies (set by the harness when it measures one)
    remedy: Optional[Dict[str, Any]] = None
    #: what else fails the target (shapelint.harness.gate: ``code-recompiles``...)
    fail_on: List[str] = field(default_factory=list)
    #: where the worker imports ``pkg.module`` references from, besides ``base_dir``
    #: (:func:`import_dirs`: the project's ``src/``, pytest's ``pythonpath``, the config's folder)
    import_paths: List[str] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_config(cls, table: Dict[str, Any]) -> "TargetSpec":
        try:
            dyn = DynamicMode.of(table.get("dynamic", "auto")).value
        except ValueError:
            raise TargetError(f"target {table.get('name')}: dynamic must be auto, true, false or "
                              f"mark, not {table.get('dynamic')!r}") from None
        batches = table.get("batch-sizes", DEFAULT_BATCHES)
        if not batches or not all(isinstance(b, int) and b > 0 for b in batches):
            raise TargetError(f"target {table.get('name')}: batch-sizes must be positive ints")
        return cls(name=table.get("name") or table["model"].split(":")[-1],
                   model=table["model"], inputs=table["inputs"], batch_sizes=list(batches),
                   seq_lens=table.get("seq-lens"), dynamic=dyn,
                   backend=table.get("backend", "eager"), device=table.get("device", "auto"),
                   mode=table.get("mode"), fullgraph=bool(table.get("fullgraph", False)),
                   max_compiles=table.get("max-compiles"), timeout=float(table.get("timeout", 300)),
                   base_dir=table.get("_base_dir", "."), check_paths=list(table.get("check-paths", [])),
                   memory_limit_mb=table.get("memory-limit-mb"), no_grad=bool(table.get("no-grad", False)),
                   seed=table.get("seed"), seed_each_shape=bool(table.get("seed-each-shape", True)),
                   suggest=bool(table.get("suggest", False)),
                   fail_on=list(table.get("fail-on", [])),
                   import_paths=list(table.get("_import_paths", [])))

    def shapes(self) -> List[Shape]:
        seqs: List[Optional[int]] = list(self.seq_lens) if self.seq_lens else [None]
        return [{"batch": b, "seq_len": s} for b in self.batch_sizes for s in seqs]


def split_ref(ref: str, key: str = "model") -> tuple:
    """``'pkg.mod:attr'`` or ``'path/to/file.py:attr'`` -> (module-or-path, attr)."""
    mod, _, attr = ref.rpartition(":")
    if ":" not in ref or not mod or not attr:
        raise TargetError(f"{key} `{ref}`: expected `pkg.module:attr` or `path/file.py:attr`")
    return mod, attr


def import_dirs(base_dir: str, project_root: Optional[str] = None, pythonpath: Sequence[str] = (),
                config_dir: Optional[str] = None) -> List[str]:
    """The folders a ``pkg.module:attr`` target is imported from, in this order: the target's
    own folder (``base_dir``), the project root and its ``src/`` (a src layout), pytest's
    ``pythonpath`` entries (the marker passes them), the config's folder. Existing folders
    only, absolute, each once."""
    found: List[str] = []
    candidates = [base_dir]
    if project_root:
        candidates += [project_root, os.path.join(project_root, "src")]
    candidates += [str(p) for p in pythonpath]
    if config_dir:
        candidates += [config_dir, os.path.join(config_dir, "src")]
    for folder in candidates:
        full = os.path.abspath(folder)
        if os.path.isdir(full) and full not in found:
            found.append(full)
    return found


def source_file(ref: str, base_dir: str = ".", import_paths: Sequence[str] = ()) -> Optional[str]:
    """The file a reference points into, found by looking in folders, never by importing:
    the parent process runs no user code (a package's ``__init__`` could raise, or do worse).
    A module only an import hook or a zip can give is found by the worker instead
    (``TargetResult.sources``)."""
    mod, _ = split_ref(ref)
    if mod.endswith(".py"):
        path = mod if os.path.isabs(mod) else os.path.join(base_dir, mod)
        return os.path.abspath(path)
    for root in [base_dir, *import_paths, os.getcwd()] + [p for p in sys.path if p]:
        base = os.path.join(root, *mod.split("."))
        for cand in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(cand):
                return os.path.abspath(cand)
    return None


def shown(path: str) -> str:
    """A folder or file as the user who ran the command sees it: relative to their working
    directory (the worker runs in the target's folder; the runner says where the command ran)."""
    start = os.environ.get("SHAPELINT_CWD") or os.getcwd()
    try:
        rel = os.path.relpath(os.path.abspath(path), start)
    except ValueError:
        return path
    return rel


def load(ref: str, base_dir: str = ".", key: str = "model",
         import_paths: Sequence[str] = ()) -> Callable[..., Any]:
    """Import the object a reference names (runs user code: call only in the worker). Every
    way of naming nothing is a TargetError that starts with the setting's ``key`` (``model``,
    ``inputs``) and says what to do; a module found in no folder lists the folders searched.
    An error raised by the user's module itself propagates (the caller reports it as the
    import of that key failing)."""
    mod, attr = split_ref(ref, key)
    if mod.endswith(".py"):
        path = mod if os.path.isabs(mod) else os.path.join(base_dir, mod)
        if not os.path.isfile(path):
            raise TargetError(f"{key} `{ref}`: no such file {shown(path)}; name a file relative "
                              f"to {shown(base_dir)} (the config's folder, or where the command runs)")
        directory = os.path.dirname(os.path.abspath(path))
        for folder in [directory, *import_paths][::-1]:
            if folder not in sys.path:
                sys.path.insert(0, folder)  # sibling helper modules import as in a script
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    else:
        searched = [os.path.abspath(base_dir), *import_paths]
        for folder in searched[::-1]:
            if folder not in sys.path:
                sys.path.insert(0, folder)
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if not missing or not (mod == missing or mod.startswith(missing + ".")):
                raise  # a module the user's code imports is missing: not this reference's fault
            looked = ", ".join(shown(f).rstrip(os.sep) + os.sep for f in dict.fromkeys(searched))
            raise TargetError(f"{key} `{ref}`: no module named `{missing}` (looked in {looked}, "
                              f"then the environment's own packages); install the project "
                              f"(`pip install -e .`), put the folder that holds `{missing.split('.')[0]}` "
                              f"on PYTHONPATH, or name a file (`path/to/file.py:{attr}`)") from None
    try:
        obj = module
        for part in attr.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        raise TargetError(f"{key} `{ref}`: {mod} has no attribute `{attr}`; name a function "
                          f"defined in it") from None
    if not callable(obj):
        raise TargetError(f"{key} `{ref}` is a {type(obj).__name__}, not callable; name a function")
    return obj
