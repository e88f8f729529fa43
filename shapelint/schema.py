"""Typed records from JSON: the one validating loader.

Everything shapelint reads back as JSON (saved reports, baselines, the worker's records, the
cache) is a dataclass in ``shapelint.finding``; :func:`load` checks a JSON value against the
class's annotations, field by field, and builds the record. A wrong type is a
:class:`SchemaError` whose one line names the field (``targets[0].events[2].line: expected an
integer, got a string``), so a hostile or damaged file can neither crash a reporter nor smuggle
a newline into a field a report prints as a number.

What the loader understands: ``str``, ``int`` (not ``bool``; 64-bit), ``float`` (finite; an int
is accepted), ``bool``, ``Any`` (any JSON value nested at most :data:`MAX_DEPTH` deep),
enums (by value), ``Optional[X]``, ``Union`` of those, ``List[X]``, ``Tuple[X, ...]``,
``Dict[str, X]`` and nested dataclasses. A field whose metadata says ``flatten`` reads its
dataclass's fields from the same object (a finding's ``path``/``line`` are its location's);
``pattern`` is a regular expression a string must match in full. Unknown keys are ignored (a
newer writer may add some); a missing field takes its default, and a missing field without one
is an error.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import re
import stat
import sys
import typing
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar

T = TypeVar("T")

#: how deep an ``Any`` field may nest (a report never needs more; a bomb of brackets does)
MAX_DEPTH = 32
#: the largest JSON file read back (a saved report of a large run is a few MB)
MAX_BYTES = 256 * 1024 * 1024
_INT_RANGE = (-(2 ** 63), 2 ** 63 - 1)


class SchemaError(ValueError):
    """A JSON value that is not the record it claims to be: one line naming the field."""


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _fail(where: str, expected: str, value: Any) -> SchemaError:
    return SchemaError(f"{where or 'the document'}: expected {expected}, got {_kind(value)}")


@lru_cache(maxsize=None)
def _hints(cls: type) -> Dict[str, Any]:
    module = sys.modules.get(cls.__module__)
    return typing.get_type_hints(cls, vars(module) if module else None)


def load(cls: Type[T], data: Any, where: str = "") -> T:
    """``data`` (parsed JSON) as a ``cls`` record, every field checked (see the module doc)."""
    return _loader(typing.cast(Any, cls))(data, where)


#: a compiled check of one type: (JSON value, where) -> the value, or a SchemaError
Loader = Callable[[Any, str], Any]


@lru_cache(maxsize=None)
def _loader(tp: Any) -> Loader:  # noqa: C901 - one branch per type form
    """The check of ``tp``, built once per type: a warm run reads back a thousand cached
    findings, and inspecting each field's annotation on every read was a quarter of it."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return _any
    if origin is typing.Union:
        return _union(args)
    if origin in (list, tuple):
        if origin is tuple and args and args[-1] is not Ellipsis:  # Tuple[str, int]
            return _fixed_tuple(args)
        return _sequence(_loader(args[0] if args else Any), origin is tuple)
    if origin is dict:
        return _mapping(_loader(args[1] if len(args) == 2 else Any))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _record(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum(tp)
    if tp in _SCALARS:
        return _SCALARS[tp]
    raise TypeError(f"schema: no rule for {tp!r}")  # a bug in a record's annotation


def _any(data: Any, where: str) -> Any:
    _check_depth(data, where)
    return data


def _union(args: Tuple[Any, ...]) -> Loader:
    nullable = type(None) in args
    alternatives = [_loader(a) for a in args if a is not type(None)]
    names = " or ".join(_name(a) for a in args)

    def load_union(data: Any, where: str) -> Any:
        if data is None and nullable:
            return None
        errors = []
        for alternative in alternatives:
            try:
                return alternative(data, where)
            except SchemaError as exc:
                errors.append(str(exc))
        raise _fail(where, names, data) if len(errors) != 1 else SchemaError(errors[0])
    return load_union


def _fixed_tuple(args: Tuple[Any, ...]) -> Loader:
    items = [_loader(a) for a in args]

    def load_tuple(data: Any, where: str) -> Any:
        if not isinstance(data, list):
            raise _fail(where, "a list", data)
        if len(data) != len(items):
            raise SchemaError(f"{where}: expected a list of {len(items)} items, got {len(data)}")
        return tuple(item(v, f"{where}[{i}]") for i, (item, v) in enumerate(zip(items, data)))
    return load_tuple


def _sequence(item: Loader, as_tuple: bool) -> Loader:
    def load_sequence(data: Any, where: str) -> Any:
        if not isinstance(data, list):
            raise _fail(where, "a list", data)
        values = [item(v, f"{where}[{i}]") for i, v in enumerate(data)]
        return tuple(values) if as_tuple else values
    return load_sequence


def _mapping(item: Loader) -> Loader:
    def load_mapping(data: Any, where: str) -> Any:
        if not isinstance(data, dict):
            raise _fail(where, "an object", data)
        return {str(k): item(v, f"{where}.{k}") for k, v in data.items()}
    return load_mapping


def _enum(tp: Type[enum.Enum]) -> Loader:
    def load_enum(data: Any, where: str) -> Any:
        try:
            return tp(data)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in tp)
            raise SchemaError(f"{where}: expected one of {allowed}, got "
                              f"{str(data)[:40]!r}") from None
    return load_enum


def _record(cls: type) -> Loader:
    construct = _construct(cls)

    def load_record(data: Any, where: str) -> Any:
        if not isinstance(data, dict):
            raise _fail(where, "an object", data)
        return construct(data, where)
    return load_record


#: one field of a record: (name, key, its check, required, pattern, its record if flattened)
_Field = Tuple[str, str, Optional[Loader], bool, Optional[str], Optional[Callable[..., Any]]]


def _fields(cls: type) -> Callable[[Dict[str, Any], str], Dict[str, Any]]:
    """The fields of a record, read from one JSON object (a flattened field from the same)."""
    specs: List[_Field] = []

    def build() -> None:
        hints = _hints(cls)
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            if f.metadata.get("flatten"):
                specs.append((f.name, f.name, None, False, None, _construct(hints[f.name])))
                continue
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            specs.append((f.name, f.metadata.get("key", f.name), _loader(hints[f.name]), required,
                          f.metadata.get("pattern"), None))

    def read(data: Dict[str, Any], where: str) -> Dict[str, Any]:
        if not specs:
            build()
        kwargs: Dict[str, Any] = {}
        for name, key, check, required, pattern, flat in specs:
            if flat is not None:
                kwargs[name] = flat(data, where)
                continue
            here = f"{where}.{key}" if where else key
            if key not in data:
                if required:
                    raise SchemaError(f"{here}: required, missing")
                continue
            value = check(data[key], here)  # type: ignore[misc]
            if pattern and isinstance(value, str) and not re.fullmatch(pattern, value):
                raise SchemaError(f"{here}: `{value[:40]!r}` is not a valid {name}")
            kwargs[name] = value
        return kwargs
    return read


def _construct(cls: type) -> Callable[[Dict[str, Any], str], Any]:
    """``cls`` built from the fields of one JSON object (a record's, or the enclosing one's for
    a flattened field); its fields' checks are built on first use: a record may nest its own
    class."""
    fields = _fields(cls)
    return lambda data, where: cls(**fields(data, where))


def _bool(data: Any, where: str) -> bool:
    if not isinstance(data, bool):
        raise _fail(where, "a boolean", data)
    return data


def _int(data: Any, where: str) -> int:
    if isinstance(data, bool) or not isinstance(data, int):
        raise _fail(where, "an integer", data)
    if not _INT_RANGE[0] <= data <= _INT_RANGE[1]:
        raise SchemaError(f"{where}: the integer is out of range")
    return data


def _float(data: Any, where: str) -> float:
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        raise _fail(where, "a number", data)
    if not math.isfinite(data) or abs(data) > 1e300:
        raise SchemaError(f"{where}: the number is out of range")
    return float(data)


def _str(data: Any, where: str) -> str:
    if not isinstance(data, str):
        raise _fail(where, "a string", data)
    return data


_SCALARS: Dict[Any, Loader] = {bool: _bool, int: _int, float: _float, str: _str}


def _name(tp: Any) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
            type(None): "null"}.get(tp, getattr(tp, "__name__", str(tp)))


def _check_depth(data: Any, where: str, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise SchemaError(f"{where}: nested too deeply")
    if isinstance(data, dict):
        for v in data.values():
            _check_depth(v, where, depth + 1)
    elif isinstance(data, list):
        for v in data:
            _check_depth(v, where, depth + 1)
    elif isinstance(data, float) and not math.isfinite(data):
        raise SchemaError(f"{where}: the number is out of range")


def dump(record: Any) -> Any:
    """A record as JSON data: the inverse of :func:`load` (flattened fields inlined, enums as
    their values, tuples as lists)."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(record):
            value = getattr(record, f.name)
            if f.metadata.get("flatten"):
                out.update(dump(value))
            else:
                out[f.metadata.get("key", f.name)] = dump(value)
        return out
    if isinstance(record, enum.Enum):
        return record.value
    if isinstance(record, (list, tuple)):
        return [dump(v) for v in record]
    if isinstance(record, dict):
        return {str(k): dump(v) for k, v in record.items()}
    return record


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text[:20]}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(text: str) -> Any:
    """JSON text as data; NaN, Infinity and numbers past a float's range are errors, and so is
    nesting deeper than Python's parser can follow (a ValueError, never a RecursionError)."""
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def read_json(path: str, what: str) -> Any:
    """The JSON document in the regular file ``path`` (not a FIFO that would block, a device or
    a folder; at most :data:`MAX_BYTES`); every failure is a ValueError or OSError whose text
    starts with ``path: not a <what>``."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise OSError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path}: not a {what}: not a regular file")
    if st.st_size > MAX_BYTES:
        raise OSError(f"{path}: not a {what}: larger than {MAX_BYTES // 2 ** 20} MiB")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
        return parse(raw.decode("utf-8"))
    except OSError as exc:
        raise OSError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a {what}: {exc}") from exc


def load_file(cls: Type[T], path: str, what: str) -> T:
    """:func:`read_json` then :func:`load`: ``path: not a <what>: <field>: <problem>``."""
    data = read_json(path, what)
    try:
        return load(cls, data)
    except SchemaError as exc:
        raise SchemaError(f"{path}: not a {what}: {exc}") from exc


def flatten() -> Dict[str, Any]:
    """Field metadata: read this dataclass-typed field's fields from the enclosing object."""
    return {"flatten": True}


__all__: Tuple[str, ...] = ("SchemaError", "load", "dump", "parse", "read_json", "load_file",
                            "flatten")
