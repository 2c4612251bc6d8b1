"""Dataclasses filled from the CLI's --json documents: one field per JSON key (a key that is a
Python keyword, "pass", becomes `passed`), nested objects as nested dataclasses where the type
says so, missing keys left at their defaults (older CLIs print fewer). Every result keeps the
whole document in `raw`, so a key this package does not know yet is never lost."""
from __future__ import annotations

import dataclasses
import sys
from typing import Any, Dict, Mapping, Type, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T")

if sys.version_info >= (3, 10):
    from types import UnionType

    _UNIONS: tuple = (Union, UnionType)
else:  # pragma: no cover
    _UNIONS = (Union,)


def key(name: str) -> Dict[str, str]:
    """Field metadata naming the JSON key when it is not the field's name: field(metadata=key("pass"))."""
    return {"json": name}


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(tp)
    if origin in _UNIONS:
        options = [a for a in get_args(tp) if a is not type(None)]
        return _convert(options[0], value) if len(options) == 1 else value
    if dataclasses.is_dataclass(tp) and isinstance(value, Mapping):
        return from_json(tp, value)  # type: ignore[arg-type]
    if origin in (list, tuple) and isinstance(value, list):
        args = get_args(tp)
        return [_convert(args[0], v) for v in value] if args else list(value)
    return value


def from_json(cls: Type[T], doc: Mapping[str, Any]) -> T:
    """cls filled from doc (see the module's docstring)."""
    hints = get_type_hints(cls)
    kwargs: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name == "raw":
            kwargs["raw"] = dict(doc)
            continue
        k = f.metadata.get("json", f.name)
        if k in doc:
            kwargs[f.name] = _convert(hints[f.name], doc[k])
    return cls(**kwargs)
