"""Configuration: ``[tool.shapelint]`` in pyproject.toml or a ``shapelint.toml`` (same keys).

The nearest file wins (searching up from the first path checked); command-line flags override
it. An unknown key, a wrong type or an unknown rule code is a ConfigError that names the file,
the key and the closest valid name: a typo must never silently disable a check.
"""

from __future__ import annotations

import difflib
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from shapelint.finding import DynamicMode

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

CONFIG_FILES = ("shapelint.toml", ".shapelint.toml", "pyproject.toml")


class ConfigError(Exception):
    """A configuration problem; the CLI exits 2 with this message."""


TARGET_KEYS = {
    "name": str, "model": str, "inputs": str, "batch-sizes": list, "seq-lens": list,
    "dynamic": (str, bool), "backend": str, "device": str, "max-compiles": int, "mode": str,
    "fullgraph": bool, "timeout": (int, float), "check-paths": list, "no-grad": bool,
    "memory-limit-mb": int, "seed": int, "seed-each-shape": bool, "suggest": bool,
    "fail-on": list,
}
#: what ``module-mode`` may be (see ``Settings.module_mode``)
MODULE_MODES = ("eval", "train", "any")
#: what ``fail-on`` (and ``run --fail-on``) may name (shapelint.harness.gate.Gate)
FAIL_ON = ("code-recompiles", "graph-breaks", "unpredicted", "any-recompile")


@dataclass
class Settings:
    """Resolved settings for one run."""

    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    per_file_ignores: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    exclude: Tuple[str, ...] = ()
    extend_exclude: Tuple[str, ...] = ()
    entry_points: Tuple[str, ...] = ()
    module_forward: bool = True
    #: the mode the compiled modules run in: ``eval`` (a model that serves: ``self.training``
    #: is False while Dynamo traces), ``train`` (a compiled training step), or ``any``
    module_mode: str = "eval"
    scalar_arg_names: Tuple[str, ...] = ()
    #: argument name -> dims that vary between calls (``{"input_ids": (0, 1)}``)
    dynamic_dims: Dict[str, Tuple[int, ...]] = field(default_factory=dict)
    #: turn on the rules whose measured precision on real code is under 0.9
    preview: bool = False
    #: what one function may cost the static pass: past these it is reported and skipped
    max_function_kib: int = 256
    max_walk_seconds: float = 60.0
    rule_paths: Tuple[str, ...] = ()
    cache_dir: str = ".shapelint_cache"
    output_format: str = "text"
    targets: List[Dict[str, Any]] = field(default_factory=list)
    config_path: Optional[str] = None
    base_dir: str = "."
    #: the keys the config file sets: a setting the file leaves out may be taken from what a
    #: replay saw (``module-mode`` from the model's ``training``, shapelint.harness.command)
    given: FrozenSet[str] = frozenset()

    def fingerprint(self) -> str:
        """What changes findings: part of the cache key."""
        parts = [self.select, self.ignore, self.extend_select, sorted(self.per_file_ignores.items()),
                 self.entry_points, self.module_forward, self.module_mode, self.scalar_arg_names,
                 self.rule_paths,
                 sorted(self.dynamic_dims.items()), self.preview, self.max_function_kib,
                 self.max_walk_seconds,
                 [(t.get("model"), t.get("inputs"), t.get("batch-sizes"), t.get("seq-lens"))
                  for t in self.targets]]  # what the static pass reads of the targets
        return repr(parts)


# key -> (Settings attribute, type, element type)
KEYS: Dict[str, Tuple[str, Any, Optional[type]]] = {
    "select": ("select", list, str),
    "ignore": ("ignore", list, str),
    "extend-select": ("extend_select", list, str),
    "per-file-ignores": ("per_file_ignores", dict, list),
    "exclude": ("exclude", list, str),
    "extend-exclude": ("extend_exclude", list, str),
    "entry-points": ("entry_points", list, str),
    "module-forward": ("module_forward", bool, None),
    "module-mode": ("module_mode", str, None),
    "scalar-arg-names": ("scalar_arg_names", list, str),
    "dynamic-dims": ("dynamic_dims", dict, list),
    "preview": ("preview", bool, None),
    "max-function-kib": ("max_function_kib", int, None),
    "max-walk-seconds": ("max_walk_seconds", (int, float), None),
    "rule-paths": ("rule_paths", list, str),
    "cache-dir": ("cache_dir", str, None),
    "output-format": ("output_format", str, None),
    "targets": ("targets", list, dict),
}


def _closest(word: str, choices: Sequence[str]) -> str:
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return f" (did you mean `{match[0]}`?)" if match else ""


def find_config(start: str) -> Optional[str]:
    """Nearest shapelint.toml, or pyproject.toml that has a [tool.shapelint] table, searching
    up from ``start`` but never past the project's root: the repository root (a folder holding
    ``.git``), else the filesystem's. A config names rule files to import, so one that another
    user could have planted above the project (``/tmp/shapelint.toml``, the pattern of git's
    CVE-2022-24765) must not be read: the search stops at the repository root, and a config
    owned by another user (not you, not root) is refused. A pyproject.toml that cannot be read
    as TOML is an error, not skipped: it may hold the ``[tool.shapelint]`` table whose
    ``ignore`` the user expects."""
    d = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        for name in CONFIG_FILES:
            p = os.path.join(d, name)
            if os.path.isfile(p):
                _check_owner(p)
                if name != "pyproject.toml":
                    return p
                if "shapelint" in _read_toml(p).get("tool", {}):
                    return p
        parent = os.path.dirname(d)
        if parent == d or os.path.exists(os.path.join(d, ".git")):
            return None
        d = parent


def repository_root(path: str) -> Optional[str]:
    """The folder holding ``.git`` at or above ``path``, if any."""
    d = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path) or ".")
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _check_owner(path: str) -> None:
    """A config found by the search must be yours (or root's), as git asks of a repository."""
    if not hasattr(os, "getuid"):
        return
    owner = os.stat(path).st_uid
    if owner not in (os.getuid(), 0):
        raise ConfigError(f"{path}: refusing a config owned by another user (uid {owner}); "
                          f"name it with --config if you trust it")


def check_rule_paths(settings: "Settings", named: bool) -> None:
    """Rule files are imported (they are code): those of a config the search found must lie in
    the project (the repository holding the config, else the config's folder). A config named
    on the command line (``--config``) is trusted as the user's own choice."""
    if named or not settings.rule_paths or not settings.config_path:
        return
    root = os.path.realpath(repository_root(settings.config_path) or settings.base_dir)
    for entry in settings.rule_paths:
        full = os.path.realpath(os.path.join(settings.base_dir, entry))
        if os.path.commonpath([full, root]) != root:
            raise ConfigError(f"{settings.config_path}: `rule-paths` entry `{entry}` is outside the "
                              f"project ({root}); rules outside it are imported only from a "
                              f"config named with --config")


def _read_toml(path: str) -> Dict[str, Any]:
    """The TOML document at ``path``; every way of failing is a ConfigError naming the file."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = raw[: exc.start].count(b"\n") + 1
        line = raw.split(b"\n")[line_no - 1].decode("utf-8", "replace")
        key = line.split("=", 1)[0].strip() if "=" in line else ""
        where = f" in the value of `{key}`" if key and "=" in line else ""
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 (byte 0x{raw[exc.start]:02x} at line "
                          f"{line_no}{where})") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc


def load_table(path: str) -> Dict[str, Any]:
    data = _read_toml(path)
    if os.path.basename(path) == "pyproject.toml":
        data = data.get("tool", {}).get("shapelint", {})
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: [tool.shapelint] must be a table")
    return data


def validate(data: Dict[str, Any], path: str, known_codes: Optional[Sequence[str]] = None) -> Settings:
    """Check every key's name and type. Rule codes are checked by :func:`check_setting_codes`
    once the rules of ``rule-paths`` are loaded (``known_codes`` checks them here at once)."""
    settings = Settings(config_path=path, base_dir=os.path.dirname(os.path.abspath(path)))
    where = "[tool.shapelint]" if path.endswith("pyproject.toml") else ""
    for key, value in data.items():
        if key not in KEYS:
            raise ConfigError(f"{path}: unknown key `{key}`{(' in ' + where) if where else ''}"
                              f"{_closest(key, list(KEYS))}")
        attr, typ, elem = KEYS[key]
        if not isinstance(value, typ) or (isinstance(value, bool) and typ is not bool):
            name = " or ".join(t.__name__ for t in typ) if isinstance(typ, tuple) else typ.__name__
            raise ConfigError(f"{path}: `{key}` must be a {name}, got {type(value).__name__}")
        if typ is list and elem is not None and not all(isinstance(v, elem) for v in value):
            raise ConfigError(f"{path}: every item of `{key}` must be a {elem.__name__}")
        if key == "per-file-ignores":
            value = validate_per_file_ignores(value, path)
        elif key == "dynamic-dims":
            value = validate_dynamic_dims(value, path)
        elif key == "targets":
            value = [validate_target(t, path, i) for i, t in enumerate(value)]
            check_target_names(value, path)
        elif key in ("exclude", "extend-exclude"):
            value = tuple(normalize_exclude(p, f"{path}: `{key}`") for p in value)
        elif key in ("max-function-kib", "max-walk-seconds") and value <= 0:
            raise ConfigError(f"{path}: `{key}` must be positive, got {value}")
        elif key == "module-mode" and value not in MODULE_MODES:
            raise ConfigError(f"{path}: `module-mode` must be one of {', '.join(MODULE_MODES)}, "
                              f"got `{value}`{_closest(value, MODULE_MODES)}")
        elif key == "output-format":
            from shapelint.report import FORMATS

            if value not in FORMATS:
                raise ConfigError(f"{path}: `output-format` must be one of {', '.join(FORMATS)}, "
                                  f"got `{value}`{_closest(value, FORMATS)}")
        elif typ is list:
            value = tuple(value)
        setattr(settings, attr, value)
    settings.given = frozenset(data)
    if known_codes is not None:
        check_setting_codes(settings, known_codes)
    return settings


def validate_per_file_ignores(value: Dict[str, Any], path: str) -> Dict[str, Tuple[str, ...]]:
    """``{glob: [codes]}``; a bare string (``"SL101"``) is an error, not a list of letters."""
    out: Dict[str, Tuple[str, ...]] = {}
    for glob, codes in value.items():
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            shown = f'["{codes}"]' if isinstance(codes, str) else "a list of rule codes"
            raise ConfigError(f"{path}: `per-file-ignores` value for `{glob}` must be a list of "
                              f"rule codes (such as {shown}), got {type(codes).__name__}")
        out[str(glob)] = tuple(codes)
    return out


def check_setting_codes(settings: Settings, known: Sequence[str]) -> None:
    """Every rule code the config names must be a known code or prefix (built-in or from
    ``rule-paths``): a typo must never silently disable a check."""
    path = settings.config_path or "config"
    for key, attr in (("select", "select"), ("ignore", "ignore"), ("extend-select", "extend_select")):
        check_codes(getattr(settings, attr), known, f"{path}: `{key}`")
    for glob, codes in settings.per_file_ignores.items():
        check_codes(codes, known, f"{path}: `per-file-ignores` for `{glob}`")


def validate_dynamic_dims(value: Dict[str, Any], path: str) -> Dict[str, Tuple[int, ...]]:
    """``{argument name: [dims that vary]}``; a dim is an int (negative counts from the end);
    the name ``*`` stands for every tensor argument of a compiled entry."""
    out: Dict[str, Tuple[int, ...]] = {}
    for name, dims in value.items():
        label = f"{path}: `dynamic-dims.{name}`"
        if not (str(name).isidentifier() or name == "*"):
            raise ConfigError(f"{label}: the key must be an argument name (or \"*\": every "
                              f"tensor argument of a compiled entry)")
        if not isinstance(dims, list) or not all(isinstance(d, int) and not isinstance(d, bool)
                                                 for d in dims):
            raise ConfigError(f"{label} must be a list of dim numbers, such as [0, 1]")
        out[str(name)] = tuple(dims)
    return out


def normalize_exclude(pattern: str, label: str) -> str:
    """An exclude glob as the walk matches it: ``./sub`` and ``sub/`` are ``sub``. An empty
    pattern is an error: anchored at the config's folder it would exclude every file."""
    norm = pattern.strip()
    while norm.startswith("./"):
        norm = norm[2:].lstrip("/")
    norm = norm.rstrip("/") if norm not in ("/",) else norm
    if not norm or norm == ".":
        raise ConfigError(f"{label}: an empty exclude pattern (`{pattern}`) would exclude every "
                          f"file; name the folders or globs to skip")
    return norm


#: the harness's settings, each with the check its value must pass and what it must be
DYNAMIC_MODES = tuple(m.value for m in DynamicMode)
_MAX_INT = 2 ** 63 - 1


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _ref(v: Any) -> bool:
    mod, _, attr = v.rpartition(":") if isinstance(v, str) else ("", "", "")
    return bool(mod.strip()) and bool(attr.strip())


def _sizes(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(_int(x) and 1 <= x <= 2 ** 31 for x in v)


TARGET_RANGES: Dict[str, Tuple[Any, str]] = {
    "name": (lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty string"),
    "model": (lambda v: _ref(v), "`pkg.module:factory` or `path/file.py:factory`"),
    "inputs": (lambda v: _ref(v), "`pkg.module:inputs` or `path/file.py:inputs`"),
    "batch-sizes": (_sizes, "a non-empty list of positive integers"),
    "seq-lens": (_sizes, "a non-empty list of positive integers"),
    "dynamic": (lambda v: isinstance(v, bool) or v in DYNAMIC_MODES,
                "one of " + ", ".join(DYNAMIC_MODES) + " (or a boolean)"),
    "backend": (lambda v: isinstance(v, str) and bool(v.strip()), "a backend name such as eager"),
    "device": (lambda v: isinstance(v, str) and bool(v.strip()), "auto, cpu, cuda or cuda:N"),
    "max-compiles": (lambda v: _int(v) and 1 <= v <= _MAX_INT, "a positive integer"),
    "timeout": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                and math.isfinite(v) and 0 < v <= 7 * 24 * 3600,
                "a positive number of seconds (at most a week)"),
    "memory-limit-mb": (lambda v: _int(v) and 1 <= v <= 2 ** 40, "a positive number of MiB"),
    "seed": (lambda v: _int(v) and 0 <= v < 2 ** 64, "an integer from 0 to 2**64 - 1"),
    "check-paths": (lambda v: isinstance(v, list) and all(isinstance(p, str) and p for p in v),
                    "a list of paths"),
    "fail-on": (lambda v: isinstance(v, list) and all(g in FAIL_ON for g in v),
                "a list of " + ", ".join(FAIL_ON)),
}


def check_target_value(key: str, value: Any, label: str) -> None:
    """One target setting against its range (``timeout = nan`` would mean no limit, a negative
    one "timed out after -5 s", ``memory-limit-mb = -1`` no limit): a ConfigError naming it."""
    rule = TARGET_RANGES.get(key)
    if rule is not None and not rule[0](value):
        shown = repr(value) if not isinstance(value, str) else f"`{value}`"
        raise ConfigError(f"{label} must be {rule[1]}, got {shown[:60]}")


def validate_target(t: Dict[str, Any], path: str, index: int) -> Dict[str, Any]:
    label = f"{path}: targets[{index}]"
    for key, value in t.items():
        if key not in TARGET_KEYS:
            raise ConfigError(f"{label}: unknown key `{key}`{_closest(key, list(TARGET_KEYS))}")
        if not isinstance(value, TARGET_KEYS[key]) or (  # type: ignore[arg-type]
                isinstance(value, bool) and TARGET_KEYS[key] in (int, (int, float))):
            raise ConfigError(f"{label}: `{key}` has the wrong type ({type(value).__name__})")
        check_target_value(key, value, f"{label}: `{key}`")
    for required in ("model", "inputs"):
        if required not in t:
            raise ConfigError(f"{label}: `{required}` is required")
    out = dict(t)
    out.setdefault("name", t["model"].split(":")[-1])
    out["_base_dir"] = os.path.dirname(os.path.abspath(path))
    return out


def check_target_names(targets: Sequence[Dict[str, Any]], path: str) -> None:
    """Every target's name (its factory's when it has none) is its own: reports, ``--target``
    and the merge of a CI matrix's shards key targets by name."""
    first: Dict[str, int] = {}
    for i, t in enumerate(targets):
        name = t.get("name") or ""
        if name in first:
            raise ConfigError(f"{path}: targets[{first[name]}] and targets[{i}] are both named "
                              f"`{name}` (a target without `name` takes its factory's); give "
                              f"each target its own `name`")
        first[name] = i


def check_codes(codes: Sequence[str], known: Sequence[str], label: str) -> None:
    for code in codes:
        if code == "ALL":
            continue
        if not any(k.startswith(code) for k in known):
            raise ConfigError(f"{label}: unknown rule code `{code}`{_closest(code, list(known))}")


def load_settings(start: str, known_codes: Optional[Sequence[str]] = None,
                  explicit: Optional[str] = None) -> Settings:
    """The nearest config (or ``explicit``), validated; its rule codes are checked against
    ``known_codes`` when given (else call :func:`check_setting_codes` after loading rules)."""
    path = explicit or find_config(start)
    if path is None:
        return Settings()
    if explicit and not os.path.exists(explicit):
        raise ConfigError(f"{explicit}: no such config file")
    if explicit and not os.path.isfile(explicit):
        raise ConfigError(f"{explicit}: not a config file (not a regular file)")
    settings = validate(load_table(path), path, known_codes)
    check_rule_paths(settings, named=bool(explicit))
    return settings


def resolve_codes(known: Sequence[str], defaults: Sequence[str], select: Sequence[str],
                  extend_select: Sequence[str], ignore: Sequence[str]) -> List[str]:
    """ruff's selection: select (or the defaults), plus extend-select, minus ignore; the
    longest matching prefix decides when select and ignore overlap."""

    def matches(code: str, prefixes: Sequence[str]) -> int:
        best = -1
        for p in prefixes:
            if p == "ALL":
                best = max(best, 0)
            elif code.startswith(p):
                best = max(best, len(p))
        return best

    base = list(select) if select else list(defaults)
    chosen = []
    for code in known:
        sel = max(matches(code, base) if select else (0 if code in defaults else -1),
                  matches(code, extend_select))
        ign = matches(code, ignore)
        if sel >= 0 and sel > ign:
            chosen.append(code)
    return chosen


def enabled_codes(rules: Mapping[str, Any], select: Sequence[str] = (),
                  extend_select: Sequence[str] = (), ignore: Sequence[str] = (),
                  preview: bool = False) -> List[str]:
    """The one place that decides which rules run.

    A rule is on by default unless it sets ``default_enabled = False`` or is a ``preview``
    rule; ``preview`` (``--preview``, ``preview = true``) turns every preview rule on. Then
    :func:`resolve_codes` applies select, extend-select and ignore, except that without
    ``preview`` a preview rule is turned on only by naming its exact code in select or
    extend-select (``ALL`` or a prefix such as ``SL1`` does not pick it up)."""
    known = list(rules)
    defaults = [c for c, r in rules.items()
                if getattr(r, "default_enabled", True) and (preview or not getattr(r, "preview", False))]
    chosen = resolve_codes(known, defaults, select, extend_select, ignore)
    if preview:
        return chosen
    named = set(select) | set(extend_select)
    return [c for c in chosen if not getattr(rules[c], "preview", False) or c in named]
