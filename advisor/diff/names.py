"""Name normalization, so that the same kernel or range matches across runs, tools and compilers.

Kernel names carry noise that changes between two builds of one program without the work changing:
vector widths and tile constants in template arguments (`<4, ...>` vs `<8, ...>`), the demangler's
spelling of literals (nsys writes `(int)128`, Kineto `128`; `2ul` vs `(unsigned long)2`), lambda
ordinals (`{lambda()#3}`), parameter lists, and compiler-generated suffixes (Triton's
`triton_poi_fused_add_0` counter, older Triton signature suffixes like `_0d1d2de`, hex hashes).
`kernel_key` removes exactly that noise and keeps what names the work: the function, the functor and
type names in its template arguments, and CUTLASS/cuBLAS tile shapes, which are part of identifiers
(`cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1` keeps `64x64_32x4`). `kernel_family` is the
coarser key (no template arguments at all) used only to judge whether two runs are the same workload.
"""

from __future__ import annotations

import re

_CAST = r"\(\s*(?:unsigned\s+|signed\s+)?(?:int|long|long long|short|char|bool|size_t|unsigned)\s*\)\s*"
_NUM_LITERAL = re.compile(
    rf"(?<![\w.])(?:{_CAST})?(?:-?(?:0x[0-9a-fA-F]+|\d+)(?:ull|ul|ll|u|l|f)?|true|false)(?![\w.])", re.IGNORECASE
)
_LAMBDA = re.compile(r"\{lambda\([^)]*\)#\d+\}|\[lambda\([^)]*\) \(instance \d+\)\]")
_ANON = re.compile(r"(?:\(anonymous namespace\)|<unnamed>)::")
_LAUNCH_CFG = re.compile(r"\s*(?:<<<[^>]*>>>|\[(?:grid|block|launch)[^\]]*\])\s*$", re.IGNORECASE)
_HEX_SUFFIX = re.compile(r"_(?=[0-9a-f]*\d)[0-9a-f]{8,}$")
_TRITON_SIG = re.compile(r"^(triton_\w*?)_?\d+d[\dde]*$")
_TRITON_NUM = re.compile(r"^(triton_\w+?)_\d+$")
_CUTLASS_WRAPPER = re.compile(r"^(?:cutlass::(?:Kernel2?|device_kernel)|cute::device_kernel)<(?P<inner>[^<>:(,]+)")
_SPACES = re.compile(r"\s+")

_API_VERSION = re.compile(r"_v\d+$")
_API_PTSZ = re.compile(r"_(?:ptsz|ptds)$")
_DATALOADER = re.compile(r"^(enumerate\(DataLoader\))#_\w*DataLoaderIter\.__next__$")
_OP_ID = re.compile(r",?\s*\b(?:op_id|seq|sequence_number)\s*=\s*\d+")
_STEP = re.compile(r"^(ProfilerStep)#\d+$")
_MODULE_INDEX = re.compile(r"(?<=[A-Za-z_])\.\d+(?=\.|\b)")
# torch.compile names each graph call by its code hash, which changes with any edit to the graph
_FX_GRAPH_HASH = re.compile(r"\b(CompiledFxGraph)\s+[0-9a-z]{16,}\b")


def _strip(name: str, pair: str) -> str:
    """Drop every balanced group of `pair` ("()": parameter lists, which differ between demanglers
    (`const T1 &` vs types); "<>": template arguments)."""
    out, depth = [], 0
    for ch in name:
        if ch == pair[0]:
            depth += 1
        elif ch == pair[1]:
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def kernel_key(name: str) -> str:
    """The matching key of a kernel name: the same work under template/hash/launch-config noise."""
    n = _LAUNCH_CFG.sub("", _SPACES.sub(" ", name.strip()))
    n = _ANON.sub("", _LAMBDA.sub("{lambda}", n))
    n = re.sub(r"\bvoid\s+", "", n)
    wrapped = _CUTLASS_WRAPPER.match(n)
    if wrapped:
        return wrapped.group("inner").strip()
    head, lt, rest = n.partition("<")
    n = head + lt + _NUM_LITERAL.sub("N", rest)
    n = _strip(n, "()").replace("operator", "")
    n = re.sub(r"\bconst\b", "", n)
    n = re.sub(r"\s*([*&<>,:])\s*", r"\1", n).replace("::::", "::")
    n = n.replace(",", ", ").strip()
    n = _HEX_SUFFIX.sub("", n)
    for pattern in (_TRITON_SIG, _TRITON_NUM):
        m = pattern.match(n)
        if m:
            n = m.group(1)
    return n


def kernel_family(name: str) -> str:
    """Coarse identity: the kernel key without any template arguments."""
    key = kernel_key(name)
    return _strip(key, "<>").strip() or key


_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_TILE = re.compile(r"^\d+(?:x\d+)+$")  # 64x64, 8x5: tile shapes, common to every kernel of a library


def kernel_words(name: str) -> frozenset[str]:
    """The words of a kernel's function name (no namespace, template arguments or parameters), lower case:
    `sgemm_naive` and `sgemm_tiled` share `sgemm`, `advance_aos` and `advance_soa` share `advance`.
    Weak evidence that two kernels do related work, used only beside other evidence (diff/identity.py)."""
    family = kernel_family(name)
    base = family.rsplit("::", 1)[-1].split(" ")[-1]
    return frozenset(w for w in (t.lower() for t in _WORD_SPLIT.split(base))
                     if len(w) >= 2 and not w.isdigit() and not _TILE.match(w))


def range_key(name: str) -> str:
    """Range names: drop PyTorch emit_nvtx counters (`, op_id = 991144`, `seq = 45368`), step numbers and
    module indices (`blocks.22.attn` -> `blocks.N.attn`): two captures of one model often cover different
    layers of the same structure, and per-index ranges would all look new or gone. torch.compile's
    `## Call CompiledFxGraph <hash> ##` loses its code hash: a changed graph is the same call site, and
    the count of graph calls per step (graph breaks) is what a diff should show."""
    n = _OP_ID.sub("", _SPACES.sub(" ", name.strip())).strip().rstrip(",")
    n = _FX_GRAPH_HASH.sub(r"\1", n)
    n = _MODULE_INDEX.sub(".N", n)
    n = _DATALOADER.sub(r"\1#__next__", n)  # single-process vs worker iterator: both "fetch the next batch"
    return _STEP.sub(r"\1#*", n)


def api_key(name: str) -> str:
    """CUDA API names across tools: nsys writes `cudaMemcpy_v3020` / `cudaLaunchKernel_ptsz`, Kineto
    `cudaMemcpy` / `cudaLaunchKernel`."""
    n = _API_VERSION.sub("", name.strip())
    return _API_PTSZ.sub("", _API_VERSION.sub("", n))


def gpu_key(name: str | None) -> str | None:
    """A GPU model name compared across tools: vendor prefix and case do not matter."""
    if not name:
        return None
    n = re.sub(r"^(nvidia|amd|tesla)\s+", "", name.strip(), flags=re.IGNORECASE)
    n = re.sub(r"^(nvidia|tesla)\s+", "", n, flags=re.IGNORECASE)
    return _SPACES.sub(" ", n).lower()
