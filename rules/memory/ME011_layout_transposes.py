from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.rules.base import Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.vocab import device_span_of, pct

CHANNELS_LAST = Fix(
    "use the channels_last memory format",
    "model = model.to(memory_format=torch.channels_last) and x = x.to(memory_format=torch.channels_last) for the "
    "inputs (the DataLoader's batches, once): cuDNN's tensor-core convolutions run NHWC, so NCHW tensors are "
    "transposed before and after every convolution; in channels_last they are not",
    "safe",
)


class LayoutTransposes(Rule):
    """Tensors in NCHW feed convolutions that run NHWC: every convolution transposes its input and output.

    ## What it detects
    Devices where kernels that convert between the NCHW and NHWC layouts (cuDNN's
    `nchwToNhwcKernel` / `nhwcToNchwKernel`, other libraries' `NCHW2NHWC` transposes: metric
    `layout_transposes`) take at least `min_gain_pct` of the device span.

    ## Why it costs time
    On Volta and later, cuDNN's tensor-core convolution kernels work on NHWC data. PyTorch keeps
    tensors NCHW (contiguous) unless asked otherwise, so for each convolution cuDNN transposes the
    input (and the weights) to NHWC, runs the convolution and transposes the output back: two or
    three extra passes over each activation, memory-bound and of no use. In a conv net trained in
    bf16 they took 36% and 49% of the kernel time in two of our probes, 9% in HTA's DDP ResNet
    trace (FP32).

    ## Trace signature
    `void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, ...>` and
    `nhwcToNchwKernel` around each convolution kernel, as many as the convolutions or more.

    ## How to fix
    ```python
    # before
    model = ResNet().cuda()
    out = model(x)
    # after
    model = ResNet().cuda().to(memory_format=torch.channels_last)
    out = model(x.to(memory_format=torch.channels_last))
    ```
    Reference workload: `reference_workloads/ME011_nchw_layout_transposes/`.

    ## Fix risk
    safe: the same math in another memory layout; custom ops that assume contiguous NCHW need
    `.contiguous()` (which transposes back) or an update.

    ## False positives
    A model with one convolution (a ViT's patch embedding) transposes once per step; its share
    stays under `min_gain_pct`. The estimate is the conversions' time only, a floor: in
    channels_last PyTorch's BatchNorm and pooling run their NHWC kernels too, which in bf16 can be
    several times faster than the NCHW ones (reference pair ME011: 3.95 ms estimated, 15.6 ms
    measured per step, 10 of them NCHW BatchNorm), and cuDNN may pick other convolution kernels.

    ## Options
    `min_gain_pct` (the conversions' time as % of the device span to fire).
    """

    code = "ME011"
    name = "layout-transposes"
    category = "memory"
    chapter = (13, 9)
    requires = frozenset({"kernels"})
    status = "preview"
    options = {
        "min_gain_pct": Option(1.0, "layout conversion time as % of the device span to fire", "-"),
    }

    clean_sums = (("layout_transpose_time", "ns"),)

    @classmethod
    def note(cls, values: Mapping[str, Any]) -> str:
        return f"NCHW <-> NHWC conversions: {ms(values['layout_transpose_time'])}"

    def check(self, ctx: Context) -> Outcome:
        spans = {int(r["device_id"]): r for r in ctx.metric("device_spans")}
        rows = ctx.metric("layout_transposes")
        conv = {int(r["device_id"]): int(r["kernel_ns"]) for r in ctx.metric("family_time") if r["family"] == "conv"}
        fired = [self._finding(r, spans[int(r["device_id"])], conv.get(int(r["device_id"]), 0)) for r in rows
                 if int(r["device_id"]) in spans
                 and pct(r["kernel_ns"], spans[int(r["device_id"])]["span_ns"], 0.0) >= float(ctx.opt("min_gain_pct"))]
        if fired:
            return Fired(tuple(fired))
        return self.clean(ctx.options, layout_transpose_time=sum(int(r["kernel_ns"]) for r in rows))

    def _finding(self, r: dict[str, Any], span: dict[str, Any], conv_ns: int) -> Finding:
        dev, t = int(r["device_id"]), int(r["kernel_ns"])
        return self.finding(
            f"device {dev}: {r['n_kernels']} NCHW <-> NHWC layout conversions took {ms(t)} "
            f"({pct(t, span['span_ns'], 0.0)}% of the span; the convolutions they surround {ms(conv_ns)}): "
            f"{str(r['top_name'])[:80]}",
            window=Window(device_id=dev, start_ns=int(span["start_ns"]), end_ns=int(span["end_ns"])),
            evidence=[
                Evidence("layout_transposes", int(r["n_kernels"]), "count"),
                Evidence("layout_transpose_time", t, "ns"),
                Evidence("layout_transpose_share", pct(t, span["span_ns"], 0.0), "%", device_span_of(dev)),
                Evidence("convolution_time", conv_ns, "ns"),
            ],
            est_gain_ns=t,
            gain_basis="the layout conversion kernels' time (metric layout_transposes): in channels_last the "
            "convolutions read and write NHWC directly and no conversion runs",
            fixes=(CHANNELS_LAST,),
            location=f"device={dev}",
        )
