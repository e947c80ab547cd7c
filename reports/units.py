"""Human units for report text. Kept here (not imported from advisor.cli) because reports sit below the CLI."""

from __future__ import annotations


def fmt_ns(ns: float | int | None) -> str:
    """A duration in the largest unit that keeps it readable; n/a for unknown."""
    if ns is None:
        return "n/a"
    a = abs(ns)
    if a >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if a >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if a >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{int(ns)} ns"


def fmt_pct(pct: float | None) -> str:
    """A percentage; None (zero denominator) is n/a, never 0%."""
    return "n/a" if pct is None else f"{pct:.1f}%"


def fmt_bytes(n: int | float | None) -> str:
    if n is None:
        return "n/a"
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{int(n)} B"


def fmt_hz(hz: int | float | None) -> str:
    if hz is None:
        return "n/a"
    return f"{hz / 1e9:.2f} GHz" if hz >= 1e9 else f"{hz / 1e6:.0f} MHz"


def fmt_value(value: object, unit: str | None) -> str:
    """An evidence value with its unit: durations and sizes humanized, other numbers compact."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    u = (unit or "").lower()
    if u in ("ns", "nanoseconds"):
        return fmt_ns(value)
    if u in ("bytes", "byte", "b"):
        return fmt_bytes(value)
    if u in ("%", "pct", "percent"):
        return fmt_pct(float(value))
    text = f"{value:,}" if isinstance(value, int) else f"{value:,.4g}"
    return f"{text} {unit}" if unit else text
