"""Whether two sides run one program when their hot kernels differ: the evidence beyond kernel names.

A change that replaces the hot kernels (a fused kernel, a tensor-core GEMM, flash attention, a tiled
rewrite) leaves little kernel time in common, so kernel names alone cannot tell it from two unrelated
programs. What such a change keeps is the data the program works on:

* **tensor shapes**: the shapes of the framework ops' input tensors (Kineto `record_shapes`). An
  unbatched `torch.mm` per item and one `torch.bmm` still read the same 256x64x512 tensor; an eager
  elementwise chain and its Triton fusion the same 8192x4096 one.
* **copy sizes** together with **kernel name words**: copies of the same exact sizes (inputs up,
  results back), and kernels whose function names share words (`sgemm_naive` / `sgemm_tiled`,
  `advance_aos` / `advance_soa`). Either alone is weak: a 256 MiB read-back or a kernel called
  `..._kernel` is in many programs, so only both together count.

Each signal is a share of weight (op inputs, copies, kernel time) that lies in keys both sides have,
computed for each side; the smaller side's share must reach the signal's minimum. What never counts:
CUDA API calls (every program calls cudaLaunchKernel and cudaDeviceSynchronize), step markers, and
framework-generated range names (`Optimizer.step#SGD.step` is in every SGD training loop).

Measured on the 64 reference-workload captures (docs/diff.md, tests/e2e/test_diff_reference.py): all 32
baseline/optimized pairs stay comparable (the 12 with < 50% kernel time in common through this
evidence); of the 1,984 pairs of captures of different workloads, 31 are still compared (14 by kernel
overlap, 17 by shared tensor shapes: layer sizes several workloads reuse), against 1,744 when any
shared CUDA API name counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from advisor.diff.align import Totals
from advisor.diff.facts import Capture
from advisor.diff.names import kernel_words
from advisor.vocab import pct

SHAPES_MIN_SHARE = 0.25  # of each side's op inputs (tensors >= facts.SHAPE_MIN_ELEMENTS elements)
COPIES_MIN_SHARE = 0.5  # of each side's copies (>= facts.COPY_MIN_BYTES)
WORDS_MIN_SHARE = 0.25  # of each side's kernel time, counted once per word of the kernel's name
SHOWN_KEYS = 3


@dataclass(frozen=True)
class Signal:
    """One kind of evidence: the share of each side's weight in keys both sides have."""

    name: str
    base: float | None  # None: the side records nothing of this kind
    new: float | None
    shared: tuple[str, ...]  # the heaviest keys in common, for the report
    minimum: float

    @property
    def share(self) -> float | None:
        return None if self.base is None or self.new is None else min(self.base, self.new)

    @property
    def holds(self) -> bool:
        return self.share is not None and self.share >= self.minimum

    def words(self) -> str:
        if self.base is None or self.new is None:
            where = "either side" if self.base is None and self.new is None else "one side"
            return f"{self.name}: none recorded on {where}"
        keys = f" ({', '.join(self.shared)})" if self.shared else ""
        return (f"{self.name}: {100 * self.base:.0f}% of base and {100 * self.new:.0f}% of new in common{keys}, "
                f"needs {100 * self.minimum:.0f}%")

    def to_dict(self) -> dict[str, object]:
        base_pct, new_pct = (None if x is None else pct(x, 1.0) for x in (self.base, self.new))
        return {"name": self.name, "base_pct": base_pct, "new_pct": new_pct,
                "min_pct": pct(self.minimum, 1.0), "shared": list(self.shared), "holds": self.holds}


@dataclass(frozen=True)
class ProgramEvidence:
    """Whether the sides are one program by something other than their kernels, and what says so."""

    shapes: Signal
    copies: Signal
    words: Signal

    @property
    def same_program(self) -> bool:
        return self.shapes.holds or (self.copies.holds and self.words.holds)

    @property
    def basis(self) -> str:
        """What makes them one program, in words (empty when nothing does)."""
        if self.shapes.holds:
            return f"share the tensor shapes their framework ops work on ({self.shapes.words()})"
        if self.copies.holds and self.words.holds:
            return (f"copy the same sizes ({self.copies.words()}) and run kernels with related names "
                    f"({self.words.words()})")
        return ""

    def missing(self) -> str:
        """Why nothing makes them one program."""
        return "; ".join(s.words() for s in (self.shapes, self.copies, self.words))

    def to_dict(self) -> dict[str, object]:
        return {"same_program": self.same_program, "basis": self.basis or None,
                "signals": [s.to_dict() for s in (self.shapes, self.copies, self.words)],
                "rule": "tensor shapes, or copy sizes and kernel name words together; CUDA API calls, step markers "
                        "and framework range names never count"}


def _signal(name: str, a: Mapping[str, float], b: Mapping[str, float], minimum: float) -> Signal:
    ta, tb = sum(a.values()), sum(b.values())
    common = a.keys() & b.keys()
    shared = tuple(sorted(common, key=lambda k: (-(a[k] / ta if ta else 0) - (b[k] / tb if tb else 0), k))[:SHOWN_KEYS])
    return Signal(name, sum(a[k] for k in common) / ta if ta else None,
                  sum(b[k] for k in common) / tb if tb else None, shared, minimum)


def _pooled(caps: list[Capture], attr: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in caps:
        for k, n in getattr(c, attr).items():
            out[k] = out.get(k, 0.0) + n / len(caps)
    return out


def _words(act: Mapping[tuple[str, str], Totals]) -> dict[str, float]:
    """Kernel time by function-name word (a kernel counts toward each of its words)."""
    out: dict[str, float] = {}
    for (kind, key), t in act.items():
        if kind == "kernel":
            for w in kernel_words(key):
                out[w] = out.get(w, 0.0) + t.total_ns
    return out


def program_evidence(base: list[Capture], new: list[Capture], base_act: Mapping[tuple[str, str], Totals],
                     new_act: Mapping[tuple[str, str], Totals]) -> ProgramEvidence:
    """The same-program signals of two sides; `*_act` are the aligned activity totals (align.activity_totals)."""
    return ProgramEvidence(
        shapes=_signal("tensor shapes", _pooled(base, "shapes"), _pooled(new, "shapes"), SHAPES_MIN_SHARE),
        copies=_signal("copy sizes", _pooled(base, "copies"), _pooled(new, "copies"), COPIES_MIN_SHARE),
        words=_signal("kernel name words", _words(base_act), _words(new_act), WORDS_MIN_SHARE),
    )
