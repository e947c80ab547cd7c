"""Number formatting shared by the screens (plain strings: no markup, safe to put in Text)."""

from __future__ import annotations

from advisor.reports.units import fmt_pct as fmt_pct  # the one percentage formatter (n/a for no denominator)


def ns(value: float | None) -> str:
    """A duration in the unit that keeps three significant digits: 812 ns, 4.00 us, 1.23 ms, 2.5 s."""
    if value is None:
        return "n/a"
    v = float(value)
    sign = "-" if v < 0 else ""
    v = abs(v)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if v >= scale:
            q = v / scale
            return f"{sign}{q:.3g} {unit}" if q < 100 else f"{sign}{q:.0f} {unit}"
    return f"{sign}{v:.0f} ns"


def signed_ns(value: int) -> str:
    return ("+" if value > 0 else "") + ns(value)


def rate(value: float | None, unit: str) -> str:
    """1.23 T<unit>/s style figures for FLOP/s and bytes/s."""
    if not value:
        return "n/a"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {prefix}{unit}/s"
    return f"{value:.3g} {unit}/s"


def inert(text: object) -> str:
    """Trace text with control characters (ESC, BEL, ...) replaced, so it cannot drive the terminal."""
    s = "" if text is None else str(text)
    return "".join(ch if ch.isprintable() or ch in "\n\t" else "\ufffd" for ch in s)


def clip(text: str, width: int) -> str:
    """Shorten to `width` characters with an ellipsis (kernel names can be kilobytes long); control chars made inert."""
    text = inert(text)
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"
