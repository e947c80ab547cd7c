"""Realistic probes (not timed pairs): everyday PyTorch programs captured to check the diagnosis on patterns no rule
was tuned on. Each writes one Kineto trace with probe_trace.profile_steps (3 active steps).

    python3 reference_workloads/common/realistic_probes.py --out DIR [names...]

- loader_transform: a small CNN trained from a DataLoader (num_workers=0) whose samples are augmented in NumPy on
  the host (about 1.5 ms per sample, 32 per batch): the GPU waits on the input pipeline.
- bf16_mlp_train: a 4-layer 8192-wide MLP trained in bf16 on 8192 rows (fused AdamW): GEMM-bound, nothing to fix
  but the GEMMs themselves.
- graph_replay_infer: a 6-layer 1024-wide FP16 MLP at batch 64 captured once in a CUDA graph and replayed 50 times
  per step: launch overhead already removed.
- many_params_adamw: a 24-layer 256-wide transformer-style stack trained with AdamW(foreach=False): ~300 parameter
  tensors updated one kernel set at a time.
- compiled_train: 4 GPT blocks (d 1024) under torch.compile (default mode), bf16 autocast, fused AdamW.
- flash_attention_train: 2 GPT blocks (d 2048) in bf16 on 4 x 4096 tokens: flash attention and large GEMMs.
- amp_gradscaler_train: 4 GPT blocks (d 1024) under fp16 autocast with a GradScaler (its inf check syncs the host).
- cpu_offload_optimizer: a 4-layer 4096-wide MLP whose AdamW runs on the host: gradients copied to pageable host
  memory and weights back every step.
- greedy_decode, channels_last_amp_cnn, embedding_recsys: batch-1 KV-cache decoding in eager mode; a conv net in
  bf16 channels_last; 8 large EmbeddingBag tables feeding an MLP (each function says more).
"""

import argparse
import os
from collections.abc import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from host_dispatch_probe import Block as GptBlock  # the same GPT block (SDPA attention, GELU MLP)
from probe_trace import profile_steps


def _train(opt: torch.optim.Optimizer, loss_of: Callable[[], torch.Tensor]) -> Callable[[int], None]:
    """A training step: the loss `loss_of` computes, backward, the optimizer step."""
    def step(_: int) -> None:
        loss = loss_of()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


class Augmented(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 1 << 16

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        img = np.random.default_rng(i).random((3, 96, 96), dtype=np.float32)
        for _ in range(6):  # blur, jitter and normalize on the host
            img = (img + np.roll(img, 1, axis=1) + np.roll(img, 1, axis=2)) / 3.0
            img = np.clip(img * 1.1 - 0.05, 0.0, 1.0)
        img = (img - img.mean()) / (img.std() + 1e-6)
        return torch.from_numpy(img[:, 16:80, 16:80].copy()), i % 10


def loader_transform() -> object:
    net = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    it = iter(torch.utils.data.DataLoader(Augmented(), batch_size=32, shuffle=True, num_workers=0))

    def step(_: int) -> None:
        x, y = next(it)
        loss = F.cross_entropy(net(x.cuda()), y.cuda())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def bf16_mlp_train() -> object:
    d = 8192
    net = nn.Sequential(*(m for _ in range(4) for m in (nn.Linear(d, d), nn.GELU()))).cuda().to(torch.bfloat16)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8192, d, device="cuda", dtype=torch.bfloat16)

    return _train(opt, lambda: net(x).float().pow(2).mean())


def graph_replay_infer() -> object:
    net = nn.Sequential(*(m for _ in range(6) for m in (nn.Linear(1024, 1024), nn.ReLU()))).cuda().half().eval()
    static_x = torch.randn(64, 1024, device="cuda", dtype=torch.half)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):
            net(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        static_y = net(static_x)

    def step(i: int) -> None:
        static_x.copy_(torch.randn(64, 1024, device="cuda", dtype=torch.half))
        for _ in range(50):
            g.replay()
        static_y.sum().item()
    return step


class TinyBlock(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def many_params_adamw() -> object:
    net = nn.Sequential(*(TinyBlock(256) for _ in range(24))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, foreach=False)
    x = torch.randn(16, 128, 256, device="cuda")

    return _train(opt, lambda: net(x).pow(2).mean())


def compiled_train() -> object:
    net = torch.compile(nn.Sequential(*(GptBlock(1024, 16) for _ in range(4))).cuda())
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8, 1024, 1024, device="cuda")

    def step(_: int) -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = net(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def flash_attention_train() -> object:
    net = nn.Sequential(*(GptBlock(2048, 16) for _ in range(2))).cuda().to(torch.bfloat16)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(4, 4096, 2048, device="cuda", dtype=torch.bfloat16)

    return _train(opt, lambda: net(x).float().pow(2).mean())


def amp_gradscaler_train() -> object:
    net = nn.Sequential(*(GptBlock(1024, 16) for _ in range(4))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, foreach=True)
    scaler = torch.amp.GradScaler("cuda")
    x = torch.randn(8, 512, 1024, device="cuda")

    def step(_: int) -> None:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = net(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step


def cpu_offload_optimizer() -> object:
    net = nn.Sequential(*(m for _ in range(4) for m in (nn.Linear(4096, 4096), nn.GELU()))).cuda()
    master = [p.detach().cpu().clone().requires_grad_(True) for p in net.parameters()]
    opt = torch.optim.AdamW(master, lr=1e-4)  # the optimizer state lives on the host
    x = torch.randn(2048, 4096, device="cuda")

    def step(_: int) -> None:
        loss = net(x).pow(2).mean()
        loss.backward()
        for m, p in zip(master, net.parameters(), strict=True):
            m.grad = p.grad.cpu()  # grads to the host (pageable)
        opt.step()
        with torch.no_grad():
            for m, p in zip(master, net.parameters(), strict=True):
                p.copy_(m)  # weights back to the GPU
                p.grad = None
    return step


def greedy_decode() -> object:
    """Batch-1 greedy decoding of 48 tokens with a KV cache in eager mode: one tiny forward per token."""
    d, h, n_layers, vocab = 1024, 16, 4, 32000
    blocks = [nn.ModuleDict({"ln": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d), "proj": nn.Linear(d, d),
                             "fc1": nn.Linear(d, 4 * d), "fc2": nn.Linear(4 * d, d)}) for _ in range(n_layers)]
    model = nn.ModuleList(blocks).cuda().half().eval()
    emb = nn.Embedding(vocab, d).cuda().half()
    head = nn.Linear(d, vocab, bias=False).cuda().half()

    @torch.no_grad()
    def step(_: int) -> None:
        tok = torch.zeros(1, 1, dtype=torch.long, device="cuda")
        cache: list[tuple[torch.Tensor, torch.Tensor]] = []
        for t in range(48):
            x = emb(tok)
            for i, b in enumerate(model):
                q, k, v = b["qkv"](b["ln"](x)).view(1, 1, 3, h, d // h).permute(2, 0, 3, 1, 4)
                if t:
                    k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
                    cache[i] = (k, v)
                else:
                    cache.append((k, v))
                a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(1, 1, d)
                x = x + b["proj"](a)
                x = x + b["fc2"](F.gelu(b["fc1"](x)))
            tok = head(x).argmax(-1)
        tok.cpu()
    return step


def channels_last_amp_cnn() -> object:
    """A ResNet-style conv stack trained with bf16 autocast in channels_last on 64 x 3 x 224 x 224 images."""
    def block(c: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True))
    net = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                        nn.MaxPool2d(3, 2, 1), block(64), block(64), nn.Conv2d(64, 128, 3, stride=2, padding=1),
                        block(128), block(128), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000))
    net = net.cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, foreach=True)
    x = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (64,), device="cuda")

    def loss() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return F.cross_entropy(net(x), y)
    return _train(opt, loss)


def embedding_recsys() -> object:
    """A DLRM-style model: 8 EmbeddingBag tables of 1M x 128 (sum pooling, 40 ids per bag, batch 4096) feeding an
    MLP, trained with sparse-free Adagrad: gathers and scatter-adds of rows dominate."""
    tables = nn.ModuleList(nn.EmbeddingBag(1 << 20, 128, mode="sum") for _ in range(8)).cuda()
    mlp = nn.Sequential(nn.Linear(8 * 128, 512), nn.ReLU(), nn.Linear(512, 1)).cuda()
    opt = torch.optim.Adagrad(list(tables.parameters()) + list(mlp.parameters()), lr=0.01, foreach=True)
    ids = [torch.randint(0, 1 << 20, (4096 * 40,), device="cuda") for _ in range(8)]
    offsets = torch.arange(0, 4096 * 40, 40, device="cuda")
    y = torch.rand(4096, 1, device="cuda")

    def loss() -> torch.Tensor:
        z = torch.cat([t(i, offsets) for t, i in zip(tables, ids, strict=True)], 1)
        return F.binary_cross_entropy_with_logits(mlp(z), y)
    return _train(opt, loss)


PROBES = {f.__name__: f for f in (
    loader_transform, bf16_mlp_train, graph_replay_infer, many_params_adamw, compiled_train, flash_attention_train,
    amp_gradscaler_train, cpu_offload_optimizer, greedy_decode, channels_last_amp_cnn, embedding_recsys)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    for name in args.names or list(PROBES):
        torch.manual_seed(0)
        profile_steps(PROBES[name](), os.path.join(args.out, f"{name}.json.gz"))  # type: ignore[arg-type]
        torch.cuda.empty_cache()
        print(name, "ok", flush=True)


if __name__ == "__main__":
    main()
