from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.perf.ops.trace import OpGroup, op_groups
from advisor.rules.base import Context, Evidence, Finding, Fired, Fix, NotApplicable, Option, Outcome, Rule, Window, ms
from advisor.vocab import device_span_of, pct

# elements per 16 bytes, per tensor-core precision: cuBLAS' aligned kernels need each leading dimension a multiple
ALIGN = {"bf16_tc": 8, "fp16_tc": 8, "tf32_tc": 4, "fp8_tc": 16, "int8_tc": 16}
PAD = 64  # what to pad to: a multiple of 64 also fills whole tiles (nanoGPT's 50,257 -> 50,304)


def _fix(dims: list[int]) -> Fix:
    said = "".join(f"{d:,} -> {-(-d // PAD) * PAD:,}; " for d in dims[:4])
    return Fix(
        f"pad the GEMM dimensions to multiples of {PAD}",
        f"{said}a vocabulary (embedding and head rows; the padded rows are never a target), a hidden or head "
        "size, or the tokens per batch; every dimension a multiple of 16 bytes' worth of elements (8 in 16-bit) lets "
        "cuBLAS run its aligned tensor-core kernels",
        "safe",
    )


@dataclass
class _Device:
    """One device's GEMM op groups on tensor cores: the aligned compute-bound ones set the rate to reach."""

    ref: dict[str, list[float]] = field(default_factory=dict)  # precision -> [FLOPs, kernel ns] of aligned groups
    odd: list[OpGroup] = field(default_factory=list)  # compute-bound groups with a misaligned dimension

    def rate(self, precision: str) -> float | None:
        """FLOPs per ns the aligned compute-bound GEMMs of `precision` reached (None without any)."""
        flop, ns = self.ref.get(precision, (0.0, 0.0))
        return flop / ns if ns else None


def _precision(g: OpGroup) -> str:
    return g.roof.precision if g.roof else ""


def _misaligned(g: OpGroup) -> list[int]:
    """The dimensions of a GEMM group that are not a multiple of its precision's 16-byte element count."""
    mnk = g.cost.mnk if g.cost and g.cost.mnk else ()
    return [d for d in mnk if d % ALIGN.get(_precision(g), 1)]


def _devices(groups: list[OpGroup]) -> dict[int, _Device]:
    out: dict[int, _Device] = {}
    for g in groups:
        if (g.family != "gemm" or g.device_id is None or g.cost is None or g.cost.mnk is None or g.roof is None
                or g.roof.precision not in ALIGN or g.roof.bound != "compute" or not g.kernel_ns):
            continue
        dev = out.setdefault(int(g.device_id), _Device())
        if _misaligned(g):
            dev.odd.append(g)
        else:
            sums = dev.ref.setdefault(g.roof.precision, [0.0, 0.0])
            sums[0] += g.flop
            sums[1] += g.kernel_ns
    return out


class MisalignedGemm(Rule):
    """GEMMs with a dimension that is not a multiple of 8 (16-bit) run fallback kernels far below the tensor-core rate.

    ## What it detects
    Per device, GEMM ops (mm, addmm, bmm, matmul, linear, _scaled_mm: their M, N and K from the
    recorded shapes, Kineto `record_shapes=True`) on tensor cores (bf16, fp16, TF32, FP8, int8) with
    a dimension that is not a multiple of 16 bytes' worth of elements (8 in 16-bit, 4 in TF32, 16 in
    FP8), bound by compute on the roofline, that reach at most `max_rate_ratio` of the rate (FLOPs
    per second of kernel time) the device's other compute-bound GEMMs of the same precision reach,
    where the time such a GEMM would save at that rate is at least `min_gain_pct` of the device
    span. Where no GEMM is priced so (no recorded shapes, or the misaligned GEMMs are memory-bound
    on the roofline, as attention's score GEMMs over an odd sequence length are), the kernel names
    say it where cuBLAS picked a CUTLASS `align1` or `align2` tensor-op kernel (metric
    `misaligned_kernels`): taking at least `min_share_pct` of the span, they are stated, unpriced.

    ## Why it costs time
    cuBLAS' fast tensor-core kernels load operands in 16-byte vectors (and on Hopper through TMA),
    which needs every leading dimension a multiple of 16 bytes. Where one is not, cuBLAS falls back
    to kernels that load one or two elements at a time, often built for an older architecture: the
    GEMM runs at a fraction of the tensor-core rate. GPT-2's 50,257-token vocabulary is the classic
    case: its LM head's three GEMMs per step ran at 95-148 TFLOP/s on an H200 against 680 for the
    model's other bf16 GEMMs (reference pair CP005). Book ch. 13: tensor-core tile dimensions
    "multiples of 8 or 16".

    ## Trace signature
    Kineto `aten::mm [8192, 768] x [768, 50257]` (and its gradients) linked to
    `cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1` kernels on an sm90 GPU, taking several
    times the time of a same-sized aligned GEMM; nsys: `align1`/`align2` tensor-op GEMM kernel names.

    ## How to fix
    ```python
    # before
    model = GPT(vocab_size=50257)
    # after: pad the embedding and head rows (the padded tokens are never a target), as nanoGPT does
    model = GPT(vocab_size=50304)                  # a multiple of 64
    ```
    The same for odd hidden sizes, head sizes or token counts: pad to a multiple of 8 (64 is better).
    Reference workload: `reference_workloads/CP005_misaligned_gemm_dims/`.

    ## Fix risk
    safe: padded rows that are never a target leave the result all but unchanged (their logits join
    the softmax's sum: about 1e-4 of the loss for 47 rows of 50,304), padded features that are zero
    leave it unchanged; the padding costs (pad - n) / n more FLOPs.

    ## False positives
    The rate to reach is what the same run's aligned GEMMs of that precision reached; if those are
    much larger the misaligned GEMM might not reach it aligned either (the estimate is then high), if
    they are smaller it is low. A misaligned M alone (an odd number of rows) rarely slows cuBLAS; the
    rate test keeps such GEMMs out.

    ## Options
    `max_rate_ratio` (a misaligned GEMM counts at most at this fraction of the aligned rate),
    `min_gain_pct` (estimated saving as % of the device span to fire), `min_share_pct` (the
    unpriced statement's floor: misaligned-operand kernels as % of the device span).
    """

    code = "CP005"
    name = "misaligned-gemm"
    category = "compute"
    chapter = (13, 9)
    requires = frozenset({"kernels"})
    status = "preview"
    options = {
        "max_rate_ratio": Option(
            0.5, "a misaligned GEMM counts when its rate is at most this fraction of the aligned GEMMs' rate",
            "reference pair CP005: 0.14-0.22",
        ),
        "min_gain_pct": Option(1.0, "estimated saving as % of the device span to fire", "-"),
        "min_share_pct": Option(
            5.0, "unpriced: misaligned-operand kernels' time as % of the device span to state it",
            "a statement without a saving is worth reading only where the kernels take a visible share",
        ),
    }

    clean_sums = (("misaligned_gemm_time", "ns"),)

    @classmethod
    def note(cls, values: Mapping[str, Any]) -> str:
        return f"slow GEMMs with a misaligned dimension: {ms(values['misaligned_gemm_time'])}"

    def applies(self, ctx: Context) -> NotApplicable | None:
        if ctx.metric("shapes_recorded")[0]["recorded"] or ctx.metric("misaligned_kernels"):
            return None
        return NotApplicable("the trace recorded no op shapes and no kernel name shows a misaligned operand, so no "
                             "GEMM's dimensions are known", "Kineto: torch.profiler.profile(record_shapes=True)")

    def check(self, ctx: Context) -> Outcome:
        spans = {int(r["device_id"]): r for r in ctx.metric("device_spans")}
        named = {int(r["device_id"]): r for r in ctx.metric("misaligned_kernels")}
        ratio, floor, named_floor = (float(ctx.opt(o)) for o in ("max_rate_ratio", "min_gain_pct", "min_share_pct"))
        fired, slow_ns = [], 0
        for dev, d in sorted(_devices(op_groups(ctx.run)).items()):
            slow = [(g, rate) for g in d.odd
                    if (rate := d.rate(_precision(g))) and g.flop / g.kernel_ns <= ratio * rate]
            slow_ns += sum(g.kernel_ns for g, _ in slow)
            gain = sum(g.kernel_ns - g.flop / r for g, r in slow)
            if dev in spans and slow and pct(gain, spans[dev]["span_ns"], 0.0) >= floor:
                fired.append(self._priced(dev, slow, gain, spans[dev]))
        priced = {f.window.device_id for f in fired}
        for dev, r in named.items():
            if dev not in priced and dev in spans and pct(r["kernel_ns"], spans[dev]["span_ns"], 0.0) >= named_floor:
                fired.append(self._named(dev, r, spans[dev]))
        if fired:
            return Fired(tuple(fired))
        return self.clean(ctx.options, misaligned_gemm_time=slow_ns)

    def _priced(self, dev: int, slow: list[tuple[OpGroup, float]], gain: float, span: dict[str, Any]) -> Finding:
        t = sum(g.kernel_ns for g, _ in slow)
        flop = sum(g.flop for g, _ in slow)
        ref = sum(r * g.kernel_ns for g, r in slow) / t  # the aligned rate, weighted as the slow GEMMs' time
        top, _ = max(slow, key=lambda gr: gr[0].kernel_ns)
        dims = sorted({d for g, _ in slow for d in _misaligned(g)}, key=lambda d: -sum(
            g.kernel_ns for g, _ in slow if d in _misaligned(g)))
        return self.finding(
            f"device {dev}: {len(slow)} GEMM shapes with a dimension that is not a multiple of "
            f"{ALIGN.get(_precision(top), 8)} ({', '.join(f'{d:,}' for d in dims[:4])}) ran "
            f"{ms(t)} at {flop / t / 1e3:.0f} TFLOP/s, against {ref / 1e3:.0f} TFLOP/s for the device's aligned "
            f"GEMMs of their precision; aligned, they would save about {ms(gain)} "
            f"({pct(gain, span['span_ns'], 0.0)}% of the span); the largest: {top.name} {_shape(top)}",
            window=Window(device_id=dev, start_ns=int(span["start_ns"]), end_ns=int(span["end_ns"])),
            evidence=[
                Evidence("misaligned_gemm_shapes", len(slow), "count"),
                Evidence("misaligned_gemm_time", t, "ns"),
                Evidence("misaligned_gemm_share", pct(t, span["span_ns"], 0.0), "%", device_span_of(dev)),
                Evidence("misaligned_rate", round(flop / t / 1e3, 1), "TFLOP/s"),
                Evidence("aligned_rate", round(ref / 1e3, 1), "TFLOP/s"),
                Evidence("misaligned_dims", ", ".join(str(d) for d in dims), "names"),
            ],
            est_gain_ns=gain,
            gain_basis="per GEMM shape with a misaligned dimension: its kernel time less its FLOPs at the rate the "
            "device's aligned compute-bound GEMMs of its precision reached (summed FLOPs over summed kernel time)",
            fixes=(_fix(dims),),
            location=f"device={dev}",
        )

    def _named(self, dev: int, r: dict[str, Any], span: dict[str, Any]) -> Finding:
        t = int(r["kernel_ns"])
        return self.finding(
            f"device {dev}: {r['n_kernels']} tensor-core GEMM kernels with a misaligned operand ({r['top_name'][:80]}) "
            f"ran {ms(t)} ({pct(t, span['span_ns'], 0.0)}% of the span)",
            window=Window(device_id=dev, start_ns=int(span["start_ns"]), end_ns=int(span["end_ns"])),
            evidence=[
                Evidence("misaligned_gemm_kernels", int(r["n_kernels"]), "count"),
                Evidence("misaligned_gemm_time", t, "ns"),
                Evidence("misaligned_gemm_share", pct(t, span["span_ns"], 0.0), "%", device_span_of(dev)),
            ],
            est_gain_ns=0,
            gain_basis="not available: no GEMM of these kernels is priced (without recorded shapes their FLOPs are "
            "unknown; memory-bound ones have no aligned rate to reach in the trace); capture with "
            "torch.profiler.profile(record_shapes=True)",
            fixes=(_fix([]),),
            location=f"device={dev}",
        )


def _shape(g: OpGroup) -> str:
    mnk = g.cost.mnk if g.cost else None
    return f"(M, N, K = {', '.join(f'{d:,}' for d in mnk)})" if mnk else ""
