"""The diagnosis vocabulary every layer shares: evidence, a finding's window, a share of time, and `pct`.

One word per concept (STYLE.md): the speed-of-light classifier (advisor.perf), the rules, the engine and the
diff all say "evidence" and "window" with these types, and every percentage of the analysis is `pct`, so
two surfaces showing the same share round it the same way. Typed rows of the JSON contract are written by
`json_row` and read back by `load` (a section kept in the cache). It imports nothing from the project: any
layer may use it.
"""

from __future__ import annotations

import importlib
import json
import types
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints, overload


@overload
def pct(part: float, whole: float) -> float | None: ...


@overload
def pct(part: float, whole: float, empty: float) -> float: ...


def pct(part: float, whole: float, empty: float | None = None) -> float | None:
    """part/whole in percent, rounded to 0.1; `empty` when whole is 0 (None, the default: reported as n/a;
    a finding's evidence shows 0)."""
    return round(100.0 * part / whole, 1) if whole else empty


def device_span_of(device_id: object) -> str:
    """The denominator of a share of one device's time, worded once for every rule and the verdict."""
    return f"device span (first to last GPU activity on device {device_id})"


def rounded(v: float | None, digits: int) -> float | None:
    """`v` rounded to `digits` places; None (a figure the trace does not give) stays None."""
    return None if v is None else round(v, digits)


# Verdict classes that name no single bound: `none` (nothing to judge), `mixed` (two named apart), `unknown`.
NOT_A_BOUND = ("none", "mixed", "unknown")


def bound_suffix(verdict_class: str) -> str:
    """'-bound' after a class that names a bound ('compute-bound'); nothing after `none`, `mixed`, `unknown`."""
    return "" if verdict_class in NOT_A_BOUND else "-bound"


def json_row(row: Any, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """A dataclass row of the JSON contract: its fields in order (those in `skip` left for the caller), a kernel's
    `kernel_class` under the contract's key `class`, tuples as lists."""
    out: dict[str, Any] = {}
    for f in fields(row):
        if f.name not in skip:
            v = getattr(row, f.name)
            out["class" if f.name == "kernel_class" else f.name] = list(v) if isinstance(v, tuple) else v
    return out


T = TypeVar("T")


def load(cls: type[T], data: Mapping[str, Any]) -> T:
    """`cls` (a dataclass) from its JSON form; keys must be exactly the fields, in order (drift fails loudly)."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if list(data) != names:
        raise ValueError(f"{cls.__name__}: keys {list(data)} are not the fields {names}")
    hints = _hints(cls)  # type: ignore[arg-type]
    return cls(**{n: _value(hints[n], data[n]) for n in names})


# types that a dataclass's module imports only for type checking, by name -> the module that defines them
_DEFERRED: dict[str, str] = {}


def defer_types(**modules: str) -> None:
    """Name types (`NcuJoin="advisor.engine.ncu"`) that `load` imports only when a field needs them."""
    _DEFERRED.update(modules)


@cache
def _hints(cls: type) -> dict[str, Any]:
    """A dataclass's field types, resolved once per class (a warm `analyze` loads about 60 records)."""
    try:
        return get_type_hints(cls)
    except NameError:  # a deferred type: import its module now
        return get_type_hints(cls, localns={n: getattr(importlib.import_module(m), n) for n, m in _DEFERRED.items()})


def _value(tp: Any, v: Any) -> Any:
    if v is None:
        return None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        inner = [a for a in get_args(tp) if a is not type(None)]
        return _value(inner[0], v) if len(inner) == 1 else v
    if origin is tuple:
        return tuple(_value(get_args(tp)[0], x) for x in v)
    if isinstance(tp, type) and is_dataclass(tp):
        return load(tp, v)
    return v


def json_list(text: str | None) -> list[Any]:
    """The JSON list in `text` (a recorded shapes/dtypes column), [] when empty, not JSON or not a list."""
    if not text:
        return []
    try:
        v = json.loads(text)
    except ValueError:
        return []
    return v if isinstance(v, list) else []


def share(ns: float, of_ns: float, of: str) -> dict[str, Any]:
    """A time figure with its denominator spelled out, so no percentage stands alone (the JSON contract's
    share object: ns, pct, of, of_ns)."""
    return {"ns": round(ns), "pct": pct(ns, of_ns), "of": of, "of_ns": round(of_ns)}


@dataclass(frozen=True)
class TimeShare:
    """A time figure with its denominator spelled out, so no percentage stands alone (`share`, typed)."""

    ns: int
    pct: float | None
    of: str
    of_ns: int


@dataclass(frozen=True)
class Evidence:
    """One number behind a finding or a classification. A percentage (unit '%') must say what it is a
    percentage of; `source` says where the number comes from when it is not the trace itself."""

    name: str
    value: float | int | str | None
    unit: str
    of: str | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        if self.unit == "%" and not self.of:
            raise ValueError(f"evidence {self.name!r} is a percentage without a denominator")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "value": self.value, "unit": self.unit}
        if self.source is not None:
            d["source"] = self.source
        if self.of:
            d["of"] = self.of
        return d


@dataclass(frozen=True)
class Window:
    """Where a finding applies: device, stream, time span on the run clock, enclosing range name."""

    device_id: int | None = None
    stream_id: int | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    range_name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}
