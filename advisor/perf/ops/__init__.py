"""Op performance models: FLOPs and compulsory bytes of framework ops from their recorded shapes.

One small module per family (`gemm`, `conv`, `attention`, `norm` (softmax and normalizations),
`elementwise`, `reduce`, `memory` (embedding, index, gather, scatter, cat), `pool`, `optimizer`,
`triton`, `vllm`);
each model is a function `OpCall -> Cost | None` whose docstring gives its formula. Usable with a
trace (`op_groups`, `ops_section`) or without one:

>>> from advisor.perf.ops import gemm
>>> c = gemm.cost(4096, 4096, 4096, dtype="bf16")
>>> c.flop, c.bytes
(137438953472.0, 100663296)
>>> r = c.on("H100")
>>> r.precision, r.bound, round(r.time_s * 1e6, 1)
('bf16_tc', 'compute', 138.9)
"""

from advisor.perf.ops import attention, conv, elementwise, gemm, memory, norm, optimizer, pool, reduce, triton, vllm
from advisor.perf.ops.base import Cost, OpCall, OpModel, RooflineTime, gpu_roofs
from advisor.perf.ops.registry import FAMILIES, MODELS, model_for, op_cost
from advisor.perf.ops.section import ops_section
from advisor.perf.ops.trace import OpGroup, op_groups

__all__ = [
    "FAMILIES",
    "MODELS",
    "Cost",
    "OpCall",
    "OpGroup",
    "OpModel",
    "RooflineTime",
    "attention",
    "conv",
    "elementwise",
    "gemm",
    "gpu_roofs",
    "memory",
    "model_for",
    "norm",
    "op_cost",
    "op_groups",
    "ops_section",
    "optimizer",
    "pool",
    "reduce",
    "triton",
    "vllm",
]
