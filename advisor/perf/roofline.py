"""Per-kernel roofline from Nsight Compute: work by precision, DRAM/L2 bytes, and the launch's roofs.

Work (FLOP, or integer ops for INT8 tensor work) comes from two bases, both stated per number:

* `sass_counters`: FP64/FP32/FP16 FMA-pipe work = add + mul + 2 x fma thread instructions. The
  counted form (`...pred_on.sum`) is used when the report has it; otherwise the rate form
  (`...sum.per_cycle_elapsed`) x `smsp__cycles_elapsed.avg`, which is how Nsight Compute's own
  roofline chart derives achieved FLOP/s (`--set full` on ncu 2024.1 stores only the rate form).
* `tensor_op_counters`: on Hopper and later reports, the exact per-path tensor op counters
  (`sm__ops_path_tensor_op_<path>_src_<type>[...].sum`, e.g. `hgmma_src_tf32`), summed per
  precision; their `.sum.peak_sustained` x the launch's SM clock is the roof. On the H100 TF32
  GEMM capture (CP001 optimized, 4096^3) the counter is exactly 2*M*N*K = 137,438,953,472.
  When present they replace the pipe-cycles estimate below.
* `tensor_pipe_cycles`: tensor-core work = tensor pipe busy fraction per MMA kind (IMMA, HMMA,
  DMMA; `sm__pipe_tensor_op_<kind>_cycles_active ... pct_of_peak_sustained_active`) x SM active
  cycles x SMs x dense ops/clk/SM for the compute capability (peaks.PER_SM_OPS). There is no
  tensor FLOP counter; on the A100 int8 CUTLASS fixture this basis reproduces 2*M*N*K of the
  CUTLASS problem (3072 x 384 x 384) to 5 significant digits, so it is an estimate with a check.

Roofs come from the launch itself where the report allows (`*.peak_sustained` x the clock the
launch ran at: what Nsight Compute draws), then from device attributes, then the peak table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

from advisor.perf.ncu_read import (
    FLOP_OPS,
    FLOP_PRECISIONS,
    SASS_COUNT,
    SASS_PEAK,
    SASS_RATE,
    TENSOR_KINDS,
    TENSOR_OPS,
    TENSOR_PIPE,
    TENSOR_SRC_PRECISION,
    NcuLaunch,
)
from advisor.perf.peaks import PER_SM_OPS, Roof, RoofSet, op_unit, roofs_for

SECTOR_BYTES = 32


@dataclass(frozen=True)
class Work:
    """Operations of one precision executed by one launch."""

    precision: str
    ops: float
    basis: str


@dataclass(frozen=True)
class KernelRoofline:
    """Where one profiled launch sits under its roofs."""

    ncu_id: int
    name: str
    device_id: int | None
    duration_ns: int | None
    work: tuple[Work, ...]
    dram_bytes: float | None
    l2_bytes: float | None
    roofs: RoofSet
    dram_basis: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def ops_per_s(self, w: Work) -> float | None:
        if not self.duration_ns:
            return None
        return w.ops / (self.duration_ns * 1e-9)

    def utilization(self, w: Work) -> float | None:
        """Achieved ops/s over that precision's compute roof (0..1)."""
        rate, roof = self.ops_per_s(w), self.roofs.compute.get(w.precision)
        if rate is None or roof is None or roof.peak <= 0:
            return None
        return rate / roof.peak

    @property
    def dominant(self) -> Work | None:
        """The precision that uses most of its own roof: the one this kernel is judged on."""
        with_ops = [w for w in self.work if w.ops > 0]
        if not with_ops:
            return None
        return max(with_ops, key=lambda w: (self.utilization(w) or 0.0, w.ops))

    @property
    def ai_dram(self) -> float | None:
        w = self.dominant
        return w.ops / self.dram_bytes if w and self.dram_bytes else None

    @property
    def ai_l2(self) -> float | None:
        w = self.dominant
        return w.ops / self.l2_bytes if w and self.l2_bytes else None

    @property
    def ridge(self) -> float | None:
        w = self.dominant
        return self.roofs.ridge(w.precision) if w else None

    @property
    def side(self) -> str | None:
        """'memory' left of the ridge point, 'compute' right of it (DRAM roofline)."""
        ai, ridge = self.ai_dram, self.ridge
        if ai is None or ridge is None:
            return None
        return "memory" if ai < ridge else "compute"

    @property
    def attainable(self) -> float | None:
        """min(compute roof, AI x bandwidth): the best this kernel could do at its intensity."""
        w, ai = self.dominant, self.ai_dram
        if w is None or ai is None or self.roofs.memory is None or w.precision not in self.roofs.compute:
            return None
        return min(self.roofs.compute[w.precision].peak, ai * self.roofs.memory.peak)

    @property
    def attained_pct(self) -> float | None:
        w, roof = self.dominant, self.attainable
        rate = self.ops_per_s(w) if w else None
        return 100.0 * rate / roof if rate is not None and roof else None


# ------------------------------------------------------------------------------------------------
def kernel_roofline(launch: NcuLaunch) -> KernelRoofline:
    """Work, traffic and roofs of one launch."""
    work = tuple(sass_work(launch) + tensor_work(launch))
    dram, dram_basis = dram_bytes(launch)
    return KernelRoofline(
        ncu_id=launch.ncu_id,
        name=launch.name,
        device_id=launch.device_id,
        duration_ns=launch.duration_ns,
        work=work,
        dram_bytes=dram,
        l2_bytes=l2_bytes(launch),
        roofs=launch_roofs(launch),
        dram_basis=dram_basis,
    )


def sass_work(launch: NcuLaunch) -> list[Work]:
    """FMA-pipe FLOP per precision from the SASS counters (count form, else rate x cycles)."""
    cycles = launch.m("sm_cycles_elapsed")
    out: list[Work] = []
    for p, precision in FLOP_PRECISIONS.items():
        counts = [launch.raw(SASS_COUNT.format(p=p, op=op)) for op in FLOP_OPS]
        if all(c is not None for c in counts):
            ops = sum(w * (c or 0.0) for w, c in zip(FLOP_OPS.values(), counts, strict=True))
            out.append(Work(precision, ops, f"SASS counters: {p}add + {p}mul + 2 x {p}fma (counted)"))
            continue
        rates = [launch.raw(SASS_RATE.format(p=p, op=op)) for op in FLOP_OPS]
        if not any(r is not None for r in rates):
            continue
        per_cycle = sum(w * (r or 0.0) for w, r in zip(FLOP_OPS.values(), rates, strict=True))
        terms = f"({p}add + {p}mul + 2 x {p}fma) per cycle"
        if cycles is not None:
            out.append(Work(precision, per_cycle * cycles, f"SASS counters: {terms} x smsp__cycles_elapsed.avg"))
        elif (clock := launch.m("sm_cycles_per_s")) and launch.duration_ns:
            # the report kept only the clock: cycles elapsed = SM clock x the launch's duration
            basis = f"SASS counters: {terms} x smsp__cycles_elapsed.avg.per_second x gpu__time_duration"
            out.append(Work(precision, per_cycle * clock * launch.duration_ns * 1e-9, basis))
    return out


def tensor_op_counts(launch: NcuLaunch) -> tuple[dict[str, float], dict[str, float], dict[str, list[str]]]:
    """From the per-path counters: ops per precision, dense peak ops/cycle per precision, paths used."""
    ops: dict[str, float] = {}
    peaks: dict[str, float] = {}
    paths: dict[str, list[str]] = {}
    for name, value in launch.metrics.items():
        m = TENSOR_OPS.match(name)
        precision = TENSOR_SRC_PRECISION.get(m["src"]) if m else None
        if m is None or precision is None:
            continue
        if m["peak"]:
            if m["sparsity"] != "on":  # dense roof: the fastest dense path of that precision
                peaks[precision] = max(peaks.get(precision, 0.0), value)
        else:
            ops[precision] = ops.get(precision, 0.0) + value
            if value > 0:
                paths.setdefault(precision, []).append(f"{m['path']}_src_{m['src']}")
    return ops, peaks, paths


def tensor_work(launch: NcuLaunch) -> list[Work]:
    """Tensor-core ops: the exact per-path counters when the report has them, else pipe busy cycles."""
    ops, _, paths = tensor_op_counts(launch)
    if ops:
        return [
            Work(p, n, f"tensor op counters: sm__ops_path_tensor_op_{{{', '.join(paths.get(p, []))}}}*.sum (exact)")
            for p, n in ops.items()
        ]
    return tensor_pipe_work(launch)


def tensor_pipe_work(launch: NcuLaunch) -> list[Work]:
    """Tensor-core ops per MMA kind from pipe busy cycles x dense ops/clk/SM."""
    cc, sms, active = launch.compute_capability, launch.m("sm_count"), launch.m("sm_cycles_active")
    per_sm = PER_SM_OPS.get(cc or "", {})
    if not sms or active is None:
        return []
    out: list[Work] = []
    for kind, precision in TENSOR_KINDS.items():
        pct = launch.raw(TENSOR_PIPE.format(kind=kind))
        if pct is None or precision not in per_sm:
            continue
        ops = pct / 100.0 * active * sms * per_sm[precision]
        basis = (
            f"tensor pipe: {kind} busy {pct:.2f}% of active cycles x {active:.0f} SM active cycles x "
            f"{sms:.0f} SMs x {per_sm[precision]} ops/clk/SM (CC {cc})"
        )
        out.append(Work(precision, ops, basis))
    return out


def dram_bytes(launch: NcuLaunch) -> tuple[float | None, str]:
    """DRAM bytes read + written, with the metric(s) used."""
    rd, wr = launch.m("dram_bytes_read"), launch.m("dram_bytes_write")
    if rd is not None and wr is not None:
        return rd + wr, "dram__bytes_read.sum + dram__bytes_write.sum"
    total = launch.m("dram_bytes")
    if total is not None:
        return total, "dram__bytes.sum"
    rate = launch.m("dram_bytes_per_s")
    if rate is not None and launch.duration_ns:
        return rate * launch.duration_ns * 1e-9, "dram__bytes.sum.per_second x duration"
    return None, "no DRAM byte metric in the report"


def l2_bytes(launch: NcuLaunch) -> float | None:
    """L2 traffic: lts__t_bytes.sum, else lts__t_sectors.sum x 32 B."""
    direct = launch.m("l2_bytes")
    if direct is not None:
        return direct
    sectors = launch.m("l2_sectors")
    return sectors * SECTOR_BYTES if sectors is not None else None


# ------------------------------------------------------------------------------------------------
def launch_roofs(launch: NcuLaunch) -> RoofSet:
    """The launch's own peaks at its clocks, each missing one filled from the device's roofs."""
    fallback = roofs_for(_device_view(launch))
    compute = dict(fallback.compute)
    compute.update(_launch_fma_roofs(launch))
    compute.update(_launch_tensor_roofs(launch))
    memory = _launch_dram_roof(launch) or fallback.memory
    return RoofSet(memory, compute, _launch_l2_roof(launch))


def _device_view(launch: NcuLaunch) -> dict[str, object]:
    """The devices row, with the CC from the launch's attributes when the row lacks it."""
    return dict(launch.device) | {"compute_capability": launch.compute_capability}


def _launch_fma_roofs(launch: NcuLaunch) -> dict[str, Roof]:
    clock = launch.m("sm_cycles_per_s")
    out: dict[str, Roof] = {}
    for p, precision in FLOP_PRECISIONS.items():
        peak = launch.raw(SASS_PEAK.format(p=p))
        if peak and clock:
            basis = f"2 x {SASS_PEAK.format(p=p)} ({peak:.0f}/cycle) x SM clock {clock / 1e9:.3f} GHz during the launch"
            out[precision] = Roof(precision, 2 * peak * clock, "FLOP/s", "ncu_launch", basis)
    return out


def _launch_tensor_roofs(launch: NcuLaunch) -> dict[str, Roof]:
    """Tensor roofs at the launch's clock: SMs x launch SM clock x dense ops/clk/SM."""
    clock, sms, cc = launch.m("sm_cycles_per_s"), launch.m("sm_count"), launch.compute_capability
    per_sm = PER_SM_OPS.get(cc or "", {})
    if not clock or not sms:
        return {}
    out: dict[str, Roof] = {}
    for precision, ops in per_sm.items():
        if precision.endswith("_tc"):
            basis = f"{sms:.0f} SMs x SM clock {clock / 1e9:.3f} GHz during the launch x {ops} ops/clk/SM (CC {cc})"
            out[precision] = Roof(precision, sms * clock * ops, op_unit(precision), "ncu_launch", basis)
    for precision, per_cycle in tensor_op_counts(launch)[1].items():  # the report's own dense peaks win
        basis = (
            f"sm__ops_path_tensor_op_*_src_{precision.removesuffix('_tc')}*.sum.peak_sustained "
            f"({per_cycle:.0f} ops/cycle, fastest dense path) x SM clock {clock / 1e9:.3f} GHz during the launch"
        )
        out[precision] = Roof(precision, per_cycle * clock, op_unit(precision), "ncu_launch", basis)
    return out


def _launch_dram_roof(launch: NcuLaunch) -> Roof | None:
    per_cycle, clock = launch.m("dram_bytes_peak_per_cycle"), launch.m("dram_cycles_per_s")
    if not per_cycle or not clock:
        return None
    basis = f"dram__bytes.sum.peak_sustained ({per_cycle:.0f} B/cycle) x DRAM clock {clock / 1e9:.3f} GHz"
    return Roof("dram", per_cycle * clock, "byte/s", "ncu_launch", basis)


def _launch_l2_roof(launch: NcuLaunch) -> Roof | None:
    """L2 peak = sectors/cycle/slice x 32 B x slices x L2 clock (cycles elapsed / duration)."""
    per_slice, slices = launch.m("l2_sectors_peak_per_cycle_slice"), launch.m("l2_slices")
    cycles, dur = launch.m("l2_cycles_elapsed"), launch.duration_ns
    if not per_slice or not slices or not cycles or not dur:
        return None
    clock = cycles / (dur * 1e-9)
    basis = (
        f"lts__t_sectors.avg.peak_sustained ({per_slice:.0f}) x 32 B x {slices:.0f} slices"
        f" x L2 clock {clock / 1e9:.3f} GHz"
    )
    return Roof("l2", per_slice * SECTOR_BYTES * slices * clock, "byte/s", "ncu_launch", basis)


def device_roofs(rooflines: list[KernelRoofline]) -> RoofSet | None:
    """One roof set for a chart: per roof the median over launches (they differ only by clock jitter)."""
    if not rooflines:
        return None
    names = {p for r in rooflines for p in r.roofs.compute}
    compute = {p: _median_roof([r.roofs.compute[p] for r in rooflines if p in r.roofs.compute]) for p in names}
    mems = [r.roofs.memory for r in rooflines if r.roofs.memory is not None]
    l2s = [r.roofs.l2 for r in rooflines if r.roofs.l2 is not None]
    return RoofSet(_median_roof(mems) if mems else None, compute, _median_roof(l2s) if l2s else None)


def _median_roof(roofs: list[Roof]) -> Roof:
    first = roofs[0]
    peak = median(r.peak for r in roofs)
    basis = first.basis if len(roofs) == 1 else f"median over {len(roofs)} launches of: {first.basis}"
    return Roof(first.name, peak, first.unit, first.source, basis)
