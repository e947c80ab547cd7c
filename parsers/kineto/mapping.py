"""mappings/kineto.toml (raw Kineto names -> model meaning, as data), in the shapes the converter looks up."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class Mappings:
    """The contents of mappings/kineto.toml, in the shapes the converter looks them up."""

    roles: dict[str, str]
    sync_kinds: dict[str, str]
    copy_kinds: dict[str, str]
    memory_kinds: dict[str, str]
    collective_kinds: dict[str, str]
    nccl_kernel_kinds: list[tuple[str, str]]
    dtype_bytes: dict[str, int]
    device_properties: dict[str, list[str]]
    vendors: dict[str, list[str]]


@cache
def mappings() -> Mappings:
    text = resources.files("advisor.parsers").joinpath("mappings/kineto.toml").read_text("utf-8")
    raw = tomllib.loads(text)
    return Mappings(
        roles={cat: spec["role"] for cat, spec in raw["categories"].items()},
        sync_kinds=raw["sync_kinds"],
        copy_kinds=raw["copy_kinds"],
        memory_kinds=raw["memory_kinds"],
        collective_kinds=raw["collective_kinds"],
        nccl_kernel_kinds=list(raw["nccl_kernel_kinds"].items()),
        dtype_bytes=raw["dtype_bytes"],
        device_properties=raw["device_properties"],
        vendors=raw["vendors"],
    )
