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
- checkpoint_every_step, metrics_on_host, fp32_cnn_no_tf32, well_fed_loader, pageable_input, topp_sampling_decode,
  grad_accum_item, small_encoder_infer_stack: a second round (each function says what it does; the last records
  Python function events, with_stack=True).
- boolean_mask_loss, compiled_reduce_overhead_train, python_layernorm, overlapped_copies, sync_timing_loop,
  cudnn_benchmark_varshape: a third round (each function says what it does).
- decode_graph_replay, decode_eager: batch-8 decoding with a static KV cache, one token's forward captured in a CUDA
  graph and replayed (as serving engines do), and the same forward run eagerly (shapes recorded).
- slow_collate_workers, tokenize_then_infer, large_vocab_loss, resnet_infer_bs1: a fifth round (each function says
  what it does).
- moe_python_loop, math_attention_train, gpt2_vocab_50257 and gpt2_vocab_50304 (its fix), grad_checkpoint_train,
  gnn_message_passing, lstm_train, fp32_gpt_train, sdpa_attention_train (math_attention_train's fix): a sixth round
  (each function says what it does).
- cpu_layer_left_behind, hf_style_generate, sparse_embedding_adam, pinned_blocking_copies, compiled_bf16_gpt_train:
  a seventh round (each function says what it does).
- rl_env_rollout, beam_search_decode, diffusion_sample_loop, dense_adam_big_embedding: an eighth round (each
  function says what it does); distributed_probes.py holds the same round's 2-GPU programs.
- autocast_fp32_weights_decode, fp64_model_train, clip_grad_per_param, contiguous_copies_attention,
  eval_accuracy_item: a ninth round (each function says what it does); fp32_tf32_model_train and clip_grad_foreach
  are the measured fixes of fp64_model_train and clip_grad_per_param, ema_per_param a per-parameter EMA.
- autocast_fp32_weights_wide_decode (and its fix bf16_weights_wide_decode), sdpa_float_mask_train: a tenth round;
  sparse_grad_big_embedding is dense_adam_big_embedding's measured fix.
- generate_without_cache, triton_row_norm_few_rows (and its fix torch_row_norm): an eleventh round (each function
  says what it does); hf_style_generate is generate_without_cache's fix.
- per_request_input_tensors (and its fix batched_input_tensor), attention_loop_over_heads (and its fix
  attention_heads_batched), dataparallel_train (2 GPUs in one process): a thirteenth round; eval_cat_accumulate (and
  its fix eval_list_then_cat) a fourteenth.
- per_sample_infer_loop (its fix per_sample_batched; rows_iter_infer_loop the same loop over `for img in x`),
  gru_cell_loop_train (its fix gru_cudnn_train), device_map_two_gpu_infer (2 GPUs in one process; its fix
  device_map_two_gpu_replicas, and two pipelined arms that are not: device_map_two_gpu_pipelined,
  device_map_two_gpu_microbatch4): a sixteenth round.
- sequential_offload_infer (its fix resident_weights_infer), eval_with_autograd (its fix eval_inference_mode),
  activation_offload_train (its fix activation_resident_train): a seventeenth round.
"""

import argparse
import os
import tempfile
from collections.abc import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from host_dispatch_probe import GPT
from host_dispatch_probe import Block as GptBlock  # the same GPT block (SDPA attention, GELU MLP)
from probe_trace import profile_steps


def _train(opt: torch.optim.Optimizer, loss_of: Callable[[], torch.Tensor]) -> Callable[[int], None]:
    """A training step: the loss `loss_of` computes, backward, the optimizer step."""
    return _train_at(opt, lambda _: loss_of())


def _train_at(opt: torch.optim.Optimizer, loss_at: Callable[[int], torch.Tensor]) -> Callable[[int], None]:
    """A training step: the loss `loss_at` computes for step i, backward, the optimizer step."""
    def step(i: int) -> None:
        loss = loss_at(i)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def _bf16_square_loss(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """A stand-in loss for a model run under bf16 autocast: the mean square of its output, in FP32."""
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return net(x).float().pow(2).mean()


class Augmented(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Samples made and augmented on the host in NumPy: `rounds` blur passes over a size x size image (each with a
    jitter and clip, and a normalisation at the end, where `clip`), cropped to crop[0]:crop[1] on both axes."""
    def __init__(self, size: int = 96, rounds: int = 6, clip: bool = True, crop: tuple[int, int] = (16, 80),
                 classes: int = 10) -> None:
        self.size, self.rounds, self.clip, self.crop, self.classes = size, rounds, clip, crop, classes

    def __len__(self) -> int:
        return 1 << 16

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        img = np.random.default_rng(i).random((3, self.size, self.size), dtype=np.float32)
        for _ in range(self.rounds):  # blur, jitter and normalize on the host
            img = (img + np.roll(img, 1, axis=1) + np.roll(img, 1, axis=2)) / 3.0
            if self.clip:
                img = np.clip(img * 1.1 - 0.05, 0.0, 1.0)
        if self.clip:
            img = (img - img.mean()) / (img.std() + 1e-6)
        a, b = self.crop
        return torch.from_numpy(img[:, a:b, a:b].copy()), i % self.classes


def _ce(net: nn.Module, x: torch.Tensor, y: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    """Cross-entropy of a host batch copied to the GPU."""
    return F.cross_entropy(net(x.cuda(non_blocking=non_blocking)), y.cuda(non_blocking=non_blocking))


def loader_transform() -> object:
    net = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    it = iter(torch.utils.data.DataLoader(Augmented(), batch_size=32, shuffle=True, num_workers=0))
    return _train(opt, lambda: _ce(net, *next(it)))


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
    return _train(opt, lambda: _bf16_square_loss(net, x))


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


def _mlp(d: int, n: int) -> nn.Module:
    return nn.Sequential(*(m for _ in range(n) for m in (nn.Linear(d, d), nn.GELU()))).cuda()


def checkpoint_every_step() -> object:
    """A 4-layer 2048-wide MLP trained in bf16 autocast on 16384 rows that saves its weights and AdamW state
    (about 200 MB) with torch.save after every step: tensors copied to the host, then written to a file."""
    net = _mlp(2048, 4)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(16384, 2048, device="cuda")
    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    train = _train(opt, lambda: _bf16_square_loss(net, x))

    def step(i: int) -> None:
        train(i)
        torch.save({"model": net.state_dict(), "opt": opt.state_dict()}, path)
    return step


def metrics_on_host() -> object:
    """A 1000-class classifier (3 x 2048 MLP, batch 8192) whose per-step metrics run on the host: probabilities to
    NumPy, top-1 and top-5 accuracy and a confusion matrix in NumPy."""
    net = nn.Sequential(_mlp(2048, 3), nn.Linear(2048, 1000)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, foreach=True)
    x = torch.randn(8192, 2048, device="cuda")
    y = torch.randint(0, 1000, (8192,), device="cuda")
    y_np = y.cpu().numpy()

    def step(_: int) -> None:
        logits = net(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        probs = logits.detach().float().softmax(1).cpu().numpy()
        top5 = np.argpartition(-probs, 5, axis=1)[:, :5]
        cm = np.zeros((1000, 1000), dtype=np.int64)
        np.add.at(cm, (y_np, probs.argmax(1)), 1)
        _ = (np.trace(cm) / len(y_np), (top5 == y_np[:, None]).any(1).mean(), loss.item())
    return step


def fp32_cnn_no_tf32() -> object:
    """A ResNet-style conv net trained in FP32 (NCHW, batch 64 x 3 x 224 x 224) with TF32 turned off for cuDNN and
    cuBLAS, as code written for bitwise reproducibility does: convolutions on CUDA cores."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False

    def block(c: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True))
    net = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                        nn.MaxPool2d(3, 2, 1), block(64), nn.Conv2d(64, 128, 3, stride=2, padding=1), block(128),
                        block(128), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, foreach=True)
    x = torch.randn(64, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (64,), device="cuda")
    return _train(opt, lambda: F.cross_entropy(net(x), y))


class Stored(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Decoded uint8 images held in memory: a cheap __getitem__."""
    def __init__(self) -> None:
        self.images = torch.randint(0, 255, (512, 3, 160, 160), dtype=torch.uint8)

    def __len__(self) -> int:
        return 1 << 16

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return self.images[i % 512], i % 1000


def well_fed_loader() -> object:
    """A bf16 channels_last conv net fed by a DataLoader with 4 workers, pinned memory and non-blocking copies of
    uint8 batches (128 x 3 x 160 x 160), normalised on the GPU: the input pipeline keeps up."""
    net = nn.Sequential(nn.Conv2d(3, 128, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(128, 256, 3, padding=1),
                        nn.ReLU(), nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(256, 1000)).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, foreach=True)
    it = iter(torch.utils.data.DataLoader(Stored(), batch_size=128, num_workers=4, pin_memory=True,
                                          persistent_workers=True, prefetch_factor=4))

    def step(_: int) -> None:
        x, y = next(it)
        x = x.cuda(non_blocking=True).to(memory_format=torch.channels_last).float().div_(255)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(net(x), y.cuda(non_blocking=True))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def pageable_input() -> object:
    """The conv net of fp32_cnn_no_tf32's shape in bf16, fed batches sliced from a dataset held in ordinary
    (pageable) host memory and copied with .cuda(non_blocking=True), which a pageable source makes synchronous."""
    net = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3), nn.ReLU(), nn.Conv2d(64, 128, 3, stride=2,
                        padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, foreach=True)
    data = torch.randn(8 * 64, 3, 224, 224)
    labels = torch.randint(0, 1000, (8 * 64,))

    def loss_at(i: int) -> torch.Tensor:
        sl = slice((i % 8) * 64, (i % 8 + 1) * 64)
        x, y = data[sl].cuda(non_blocking=True), labels[sl].cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return F.cross_entropy(net(x), y)
    return _train_at(opt, loss_at)


def topp_sampling_decode() -> object:
    """Batch-16 decoding of 32 tokens from a 2-layer model with a 128K-token vocabulary, nucleus (top-p) sampling by
    a full sort of the logits each token, and an end-of-sequence check that reads a flag back every token."""
    d, vocab = 1024, 131072
    body = _mlp(d, 2).half().eval()
    emb, head = nn.Embedding(vocab, d).cuda().half(), nn.Linear(d, vocab, bias=False).cuda().half()

    @torch.no_grad()
    def step(_: int) -> None:
        tok = torch.zeros(16, dtype=torch.long, device="cuda")
        for _t in range(32):
            logits = head(body(emb(tok))).float()
            probs, idx = torch.sort(logits.softmax(-1), descending=True)
            keep = probs.cumsum(-1) - probs < 0.9
            probs = probs * keep
            pick = torch.multinomial(probs / probs.sum(-1, keepdim=True), 1)
            tok = idx.gather(-1, pick).squeeze(-1)
            if bool((tok == 2).all()):
                break
    return step


def grad_accum_item() -> object:
    """4 GPT blocks (d 1024) trained in bf16 autocast with 4 micro-batches per optimizer step, each micro-batch's
    loss read back with .item() for logging."""
    net = nn.Sequential(*(GptBlock(1024, 16) for _ in range(4))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    xs = [torch.randn(8, 1024, 1024, device="cuda") for _ in range(4)]

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for x in xs:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = net(x).float().pow(2).mean() / len(xs)
            loss.backward()
            total += loss.item()
        opt.step()
    return step


def small_encoder_infer_stack() -> object:
    """A 6-layer BERT-small-like encoder (d 512, 8 heads) answering batch-1, 128-token requests in eager mode, captured
    with Python function events (with_stack=True) as TraceLens' and many users' captures are."""
    layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, norm_first=True)
    net = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False).cuda().eval()
    x = torch.randn(1, 128, 512, device="cuda")

    @torch.no_grad()
    def step(_: int) -> None:
        net(x).mean(1).cpu()
    return step


def boolean_mask_loss() -> object:
    """4 GPT blocks (d 1024) in bf16 autocast whose loss keeps only the tokens a boolean mask selects (h[mask]): the
    host waits for the GPU to count the mask before it can size the result, once per step, mid-forward."""
    net = nn.Sequential(*(GptBlock(1024, 16) for _ in range(4))).cuda()
    head = nn.Linear(1024, 32000).cuda()
    opt = torch.optim.AdamW(list(net.parameters()) + list(head.parameters()), lr=1e-4, fused=True)
    x = torch.randn(8, 512, 1024, device="cuda")
    y = torch.randint(0, 32000, (8, 512), device="cuda")
    mask = torch.rand(8, 512, device="cuda") > 0.3

    def loss() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = head(net(x)[mask])
        return F.cross_entropy(logits.float(), y[mask])
    return _train(opt, loss)


def compiled_reduce_overhead_train() -> object:
    """4 GPT blocks (d 512) on 4 x 256 tokens under torch.compile(mode='reduce-overhead'), whose forward and backward
    replay as CUDA graphs (cudagraph trees); bf16 autocast, fused AdamW outside the graphs."""
    net = torch.compile(nn.Sequential(*(GptBlock(512, 8) for _ in range(4))).cuda(), mode="reduce-overhead")
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(4, 256, 512, device="cuda")

    def step(_: int) -> None:
        torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = net(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


class OpsLayerNorm(nn.Module):
    """LayerNorm written out in tensor ops, as in older or ported model code: six kernels where one would do."""
    def __init__(self, d: int) -> None:
        super().__init__()
        self.w, self.b = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mu = x.mean(-1, keepdim=True)
        var = (x - mu).pow(2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + 1e-5) * self.w + self.b


def python_layernorm() -> object:
    """A 6-layer MLP (d 4096, 8192 rows, bf16 weights and activations) normalising each layer's output with
    OpsLayerNorm: the normalisation's elementwise and reduction kernels each read and write the activation."""
    layers = [m for _ in range(6) for m in (nn.Linear(4096, 4096), OpsLayerNorm(4096), nn.GELU())]
    net = nn.Sequential(*layers).cuda().to(torch.bfloat16)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    return _train(opt, lambda: net(x).float().pow(2).mean())


def overlapped_copies() -> object:
    """A bf16 MLP (4 x 4096, 8192 rows) fed 128 MB batches from pinned host memory, each copied on a side stream
    while the previous batch computes (double-buffered, ordered by events): the textbook overlap."""
    net = _mlp(4096, 4).to(torch.bfloat16)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    host = [torch.randn(8192, 4096, dtype=torch.bfloat16).pin_memory() for _ in range(2)]
    dev = [torch.empty(8192, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    side, ready = torch.cuda.Stream(), [torch.cuda.Event(), torch.cuda.Event()]
    dev[0].copy_(host[0])

    def step(i: int) -> None:
        cur, nxt = i % 2, (i + 1) % 2
        with torch.cuda.stream(side):
            side.wait_stream(torch.cuda.current_stream())  # the buffer is free once the last step used it
            dev[nxt].copy_(host[nxt], non_blocking=True)
            ready[nxt].record(side)
        torch.cuda.current_stream().wait_event(ready[cur])
        loss = net(dev[cur]).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    ready[0].record(torch.cuda.current_stream())
    return step


def sync_timing_loop() -> object:
    """The bf16 GEMM-bound MLP of bf16_mlp_train (4 x 8192, 8192 rows), timed the benchmark way, with
    torch.cuda.synchronize() after every step: the GPU is busy almost all of the step."""
    inner = bf16_mlp_train()

    def step(i: int) -> None:
        inner(i)  # type: ignore[operator]
        torch.cuda.synchronize()
    return step


def cudnn_benchmark_varshape() -> object:
    """A conv net trained with torch.backends.cudnn.benchmark = True on batches whose image size changes every step
    (160 to 224 px, as variable-resolution data or random-resized crops without padding give): cuDNN tries its
    algorithms again for every new shape."""
    torch.backends.cudnn.benchmark = True
    net = nn.Sequential(nn.Conv2d(3, 64, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1),
                        nn.ReLU(), nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(128, 1000)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, foreach=True)
    y = torch.randint(0, 1000, (32,), device="cuda")

    def loss_at(i: int) -> torch.Tensor:
        x = torch.randn(32, 3, 160 + 8 * i, 160 + 8 * i, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return F.cross_entropy(net(x), y)
    return _train_at(opt, loss_at)


class DecodeLayer(nn.Module):
    """A pre-norm transformer layer decoding one token per sequence against a static KV cache (max_len positions)."""
    def __init__(self, d: int, h: int, b: int, max_len: int) -> None:
        super().__init__()
        self.h, self.dh = h, d // h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("k", torch.zeros(b, h, max_len, d // h))
        self.register_buffer("v", torch.zeros(b, h, max_len, d // h))

    def forward(self, x: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, _, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, 1, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        self.k.index_copy_(2, pos, k)
        self.v.index_copy_(2, pos, v)
        a = F.scaled_dot_product_attention(q, self.k, self.v, attn_mask=mask)
        x = x + self.proj(a.transpose(1, 2).reshape(b, 1, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def _decoder(b: int = 8, max_len: int = 512) -> tuple[Callable[[], torch.Tensor], torch.Tensor, torch.Tensor,
                                                      torch.Tensor]:
    """8 DecodeLayers (d 2048, 16 heads, about 400M parameters in bf16): each token reads all the weights."""
    layers = nn.ModuleList(DecodeLayer(2048, 16, b, max_len) for _ in range(8)).cuda().to(torch.bfloat16).eval()
    x = torch.randn(b, 1, 2048, device="cuda", dtype=torch.bfloat16)
    pos = torch.zeros(1, dtype=torch.long, device="cuda")
    mask = torch.zeros(1, 1, 1, max_len, dtype=torch.bool, device="cuda")

    @torch.no_grad()
    def token() -> torch.Tensor:
        h = x
        for layer in layers:
            h = layer(h, pos, mask)
        return h
    return token, x, pos, mask


def decode_graph_replay() -> object:
    """64 tokens per step, each token's forward replayed from one CUDA graph (captured once, as vLLM and SGLang do);
    the position and mask advance outside the graph. The replayed kernels have no op and no recorded shapes."""
    token, x, pos, mask = _decoder()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            token()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = token()

    def replay() -> torch.Tensor:
        g.replay()
        return out
    return _decode_steps(replay, x, pos, mask)


def decode_eager() -> object:
    """decode_graph_replay's 64 tokens per step run eagerly: the same kernels, launched one by one, with shapes."""
    return _decode_steps(*_decoder())


def _decode_steps(token: Callable[[], torch.Tensor], x: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor
                  ) -> Callable[[int], None]:
    """A step of 64 tokens: advance the position and the mask, run the token's forward, feed its output back."""
    def step(_: int) -> None:
        mask.zero_()
        for t in range(64):
            pos.fill_(t)
            mask[..., t] = True
            x.copy_(token())
    return step


def slow_collate_workers() -> object:
    """A small conv net fed by a DataLoader with 2 workers whose samples take about 8 ms each to augment (64 per
    batch): the workers cannot keep up with the GPU."""
    net = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 100)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, foreach=True)
    slow = Augmented(size=128, rounds=24, clip=False, crop=(0, 112), classes=100)  # about 8 ms a sample
    it = iter(torch.utils.data.DataLoader(slow, batch_size=64, num_workers=2, pin_memory=True,
                                          persistent_workers=True))
    return _train(opt, lambda: _ce(net, *next(it), non_blocking=True))


def tokenize_then_infer() -> object:
    """Inference on 64 text requests per step, tokenized in Python on the host (split, vocabulary lookup, padding)
    before 4 GPT blocks (d 1024) run on the batch in bf16: the host prepares each batch while the GPU waits."""
    net = nn.Sequential(*(GptBlock(1024, 16) for _ in range(4))).cuda().to(torch.bfloat16).eval()
    emb = nn.Embedding(32000, 1024).cuda().to(torch.bfloat16)
    words = [f"w{i}" for i in range(5000)]
    vocab = {w: i for i, w in enumerate(words)}
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, 256)) for _ in range(64)]

    @torch.no_grad()
    def step(_: int) -> None:
        ids = [[vocab.get(w.lower().strip(".,"), 0) for w in t.split()][:256] for t in texts * 4][:64]
        batch = torch.tensor([row + [0] * (256 - len(row)) for row in ids]).cuda()
        net(emb(batch)).float().mean().item()
    return step


def large_vocab_loss() -> object:
    """A language-model head over a 128K vocabulary on 8 x 1024 tokens in bf16 autocast, with the full logits
    (4 GB in FP32) materialised for cross-entropy: softmax and loss kernels stream them."""
    body = nn.Sequential(*(GptBlock(1024, 16) for _ in range(2))).cuda()
    head = nn.Linear(1024, 131072, bias=False).cuda()
    opt = torch.optim.AdamW(list(body.parameters()) + list(head.parameters()), lr=1e-4, fused=True)
    x = torch.randn(8, 1024, 1024, device="cuda")
    y = torch.randint(0, 131072, (8 * 1024,), device="cuda")

    def loss() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = head(body(x))
        return F.cross_entropy(logits.float().view(-1, 131072), y)
    return _train(opt, loss)


class Bottleneck(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.c1, self.c2, self.c3 = nn.Conv2d(c, c // 4, 1), nn.Conv2d(c // 4, c // 4, 3, padding=1), nn.Conv2d(
            c // 4, c, 1)
        self.b1, self.b2, self.b3 = nn.BatchNorm2d(c // 4), nn.BatchNorm2d(c // 4), nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.b1(self.c1(x)))
        h = F.relu(self.b2(self.c2(h)))
        return F.relu(x + self.b3(self.c3(h)))


def resnet_infer_bs1() -> object:
    """A ResNet-50-like stack of 16 bottleneck blocks answering batch-1 224 x 224 requests eagerly in FP16:
    about 160 small kernels per image."""
    net = nn.Sequential(nn.Conv2d(3, 256, 7, stride=4, padding=3), *(Bottleneck(256) for _ in range(16)),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 1000)).cuda().half().eval()
    x = torch.randn(1, 3, 224, 224, device="cuda", dtype=torch.half)

    @torch.no_grad()
    def step(_: int) -> None:
        for _r in range(8):
            net(x).argmax(1).cpu()
    return step


class MoeLayer(nn.Module):
    """A Mixtral-style mixture-of-experts MLP (top-2 of `e` experts) routed by a Python loop over the experts, as in
    reference implementations: each expert finds its tokens with torch.where (nonzero: a host sync), gathers them, runs
    its MLP and scatter-adds the weighted result back."""
    def __init__(self, d: int, e: int) -> None:
        super().__init__()
        self.ln, self.gate = nn.LayerNorm(d), nn.Linear(d, e, bias=False)
        self.w1 = nn.ModuleList(nn.Linear(d, 2 * d) for _ in range(e))
        self.w2 = nn.ModuleList(nn.Linear(2 * d, d) for _ in range(e))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln(x).view(-1, x.shape[-1])
        w, idx = torch.topk(self.gate(h).softmax(-1), 2, dim=-1)
        out = torch.zeros_like(h)
        for e, (w1, w2) in enumerate(zip(self.w1, self.w2, strict=True)):
            rows, slot = torch.where(idx == e)
            y = w2(F.silu(w1(h[rows]))) * w[rows, slot, None]
            out = out.index_add(0, rows, y.to(out.dtype))
        return x + out.view_as(x)


def moe_python_loop() -> object:
    """4 MoE layers (d 1024, 8 experts, top-2) on 8 x 512 tokens trained in bf16 autocast with fused AdamW, routed by
    the Python loop of MoeLayer: 32 host syncs per forward and about 1,000 tokens per expert GEMM."""
    net = nn.Sequential(*(MoeLayer(1024, 8) for _ in range(4))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8, 512, 1024, device="cuda")
    return _train(opt, lambda: _bf16_square_loss(net, x))


class MathAttnBlock(GptBlock):
    """The GPT block with attention written out as in nanoGPT's slow path: scores, causal mask, softmax, dropout,
    scores times values; the T x T score matrix is written to memory several times."""
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.h) ** 0.5)
        att = att.masked_fill(torch.ones(t, t, device=x.device, dtype=torch.bool).tril().logical_not(), float("-inf"))
        att = F.dropout(F.softmax(att, dim=-1), 0.1, self.training)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def math_attention_train() -> object:
    """4 MathAttnBlocks (d 1024, 16 heads) trained on 4 x 2048 tokens in bf16 autocast with fused AdamW."""
    net = nn.Sequential(*(MathAttnBlock(1024, 16) for _ in range(4))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(4, 2048, 1024, device="cuda")
    return _train(opt, lambda: _bf16_square_loss(net, x))


class SdpaDropoutBlock(GptBlock):
    """MathAttnBlock's fix: the same attention (causal, dropout 0.1) in one scaled_dot_product_attention call."""
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1 if self.training else 0.0, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def sdpa_attention_train() -> object:
    """math_attention_train with SdpaDropoutBlock: the measured fix of its unfused attention."""
    net = nn.Sequential(*(SdpaDropoutBlock(1024, 16) for _ in range(4))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(4, 2048, 1024, device="cuda")
    return _train(opt, lambda: _bf16_square_loss(net, x))


def _gpt2_train(vocab: int) -> object:
    """A GPT-2-small-like model (6 blocks, d 768, 12 heads) with a `vocab`-token head trained on 8 x 1024 tokens in
    bf16 autocast with fused AdamW and cross-entropy."""
    net = GPT(vocab=vocab, d=768, h=12, n=6).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    idx = torch.randint(0, 50257, (8, 1024), device="cuda")

    def loss() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = net(idx)
        return F.cross_entropy(logits.float().view(-1, vocab), idx.view(-1))
    return _train(opt, loss)


def gpt2_vocab_50257() -> object:
    """_gpt2_train with GPT-2's 50,257-token vocabulary: the head's GEMMs have an odd dimension."""
    return _gpt2_train(50257)


def gpt2_vocab_50304() -> object:
    """_gpt2_train with the vocabulary padded to 50,304 (a multiple of 64), as nanoGPT does: gpt2_vocab_50257's fix."""
    return _gpt2_train(50304)


def grad_checkpoint_train() -> object:
    """8 GPT blocks (d 1024) trained on 8 x 1024 tokens in bf16 autocast with activation checkpointing per block
    (torch.utils.checkpoint, non-reentrant): each block's forward runs again in the backward."""
    from torch.utils.checkpoint import checkpoint
    blocks = nn.ModuleList(GptBlock(1024, 16) for _ in range(8)).cuda()
    opt = torch.optim.AdamW(blocks.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8, 1024, 1024, device="cuda")

    def loss() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            h = x
            for blk in blocks:
                h = checkpoint(blk, h, use_reentrant=False)
            return h.float().pow(2).mean()
    return _train(opt, loss)


def gnn_message_passing() -> object:
    """A 3-layer GCN-style network in FP32 on a random graph of 500K nodes and 8M edges (width 128): each layer
    gathers source features per edge (index_select) and scatter-adds them into the destination nodes (index_add_),
    as message passing without sparse kernels does."""
    n, m = 500_000, 8_000_000
    src, dst = torch.randint(0, n, (m,), device="cuda"), torch.randint(0, n, (m,), device="cuda")
    lins = nn.ModuleList(nn.Linear(128, 128) for _ in range(3)).cuda()
    opt = torch.optim.Adam(lins.parameters(), lr=1e-3, fused=True)
    x = torch.randn(n, 128, device="cuda")
    y = torch.randint(0, 128, (n,), device="cuda")

    def loss() -> torch.Tensor:
        h = x
        for lin in lins:
            h = F.relu(lin(torch.zeros_like(h).index_add_(0, dst, h.index_select(0, src))))
        return F.cross_entropy(h, y)
    return _train(opt, loss)


def lstm_train() -> object:
    """A 2-layer LSTM language model (hidden 1024, 32K vocabulary) trained in FP32 on 64 sequences of 256 tokens
    (cuDNN's RNN kernels, TF32 allowed for cuDNN by default)."""
    emb, rnn = nn.Embedding(32000, 1024).cuda(), nn.LSTM(1024, 1024, 2, batch_first=True).cuda()
    head = nn.Linear(1024, 32000).cuda()
    opt = torch.optim.Adam([*emb.parameters(), *rnn.parameters(), *head.parameters()], lr=1e-3, foreach=True)
    idx = torch.randint(0, 32000, (64, 256), device="cuda")
    return _train(opt, lambda: F.cross_entropy(head(rnn(emb(idx))[0]).view(-1, 32000), idx.view(-1)))


def fp32_gpt_train() -> object:
    """4 GPT blocks (d 1024) trained in plain FP32 on 8 x 1024 tokens with PyTorch's defaults (TF32 off for matmul),
    fused AdamW: no autocast."""
    net = nn.Sequential(*(GptBlock(1024, 16) for _ in range(4))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8, 1024, 1024, device="cuda")
    return _train(opt, lambda: net(x).pow(2).mean())


def cpu_layer_left_behind() -> object:
    """A 4-layer 4096-wide bf16 MLP on the GPU whose output projection (4096 -> 1024, FP32) was left on the CPU, as
    after a partial .cuda(): each step copies the activations to the host, runs the layer there and copies back."""
    body = _mlp(4096, 4).cuda().to(torch.bfloat16)
    head = nn.Linear(4096, 1024)  # on the CPU
    x = torch.randn(2048, 4096, device="cuda", dtype=torch.bfloat16)

    @torch.no_grad()
    def step(_: int) -> None:
        h = body(x)
        y = head(h.float().cpu()).cuda()
        y.sum().item()
    return step


_Cache = list[tuple[torch.Tensor, torch.Tensor]]


def _growing_cache_layers(n: int, d: int = 1024, h: int = 16, vocab: int = 32000
                          ) -> tuple[Callable[[torch.Tensor, int, _Cache], torch.Tensor], nn.Embedding]:
    """n GPT-style bf16 layers (d, h heads) whose KV cache grows by torch.cat every token (Hugging Face's
    DynamicCache): layer(x, i, cache) runs layer i, appending its keys and values to cache[i]; and the embedding."""
    ws = [(nn.Linear(d, 3 * d), nn.Linear(d, d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)) for _ in range(n)]
    mods = nn.ModuleList(nn.ModuleList(w) for w in ws).cuda().to(torch.bfloat16)

    def layer(x: torch.Tensor, i: int, cache: _Cache) -> torch.Tensor:
        qkv, proj, fc1, fc2 = mods[i]
        b, t, _ = x.shape
        q, k, v = qkv(F.layer_norm(x, (d,))).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        if len(cache) > i:
            k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
            cache[i] = (k, v)
        else:
            cache.append((k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1).transpose(1, 2).reshape(b, t, d)
        x = x + proj(a)
        return x + fc2(F.gelu(fc1(F.layer_norm(x, (d,)))))
    return layer, nn.Embedding(vocab, d).cuda().to(torch.bfloat16)


def hf_style_generate() -> object:
    """Batch-4 greedy generation of 48 tokens after a 512-token prompt from 8 GPT-style layers (d 1024) whose KV
    cache grows by torch.cat every token (Hugging Face's DynamicCache), with a stopping check each token
    (the sequences' EOS flags read with .item()), in eager mode."""
    n = 8
    layer, emb = _growing_cache_layers(n)
    prompt = torch.randint(0, 32000, (4, 512), device="cuda")

    @torch.no_grad()
    def step(_: int) -> None:
        cache: list[tuple[torch.Tensor, torch.Tensor]] = []
        ids, done = prompt, torch.zeros(4, dtype=torch.bool, device="cuda")
        for _t in range(48):
            x = emb(ids if not cache else ids[:, -1:])
            for i in range(n):
                x = layer(x, i, cache)
            nxt = (x[:, -1] @ emb.weight.T).argmax(-1)
            done |= nxt == 2
            ids = torch.cat([ids, nxt[:, None]], 1)
            if done.all().item():
                break
    return step


def sparse_embedding_adam() -> object:
    """embedding_recsys' model with sparse gradients: 8 EmbeddingBag tables of 1M x 128 (sparse=True) updated by
    SparseAdam, the MLP by fused Adam: the optimizer touches only the rows each batch looked up."""
    tables = nn.ModuleList(nn.EmbeddingBag(1 << 20, 128, mode="sum", sparse=True) for _ in range(8)).cuda()
    mlp = nn.Sequential(nn.Linear(8 * 128, 512), nn.ReLU(), nn.Linear(512, 1)).cuda()
    sparse_opt = torch.optim.SparseAdam(list(tables.parameters()), lr=0.01)
    dense_opt = torch.optim.Adam(mlp.parameters(), lr=0.01, fused=True)
    ids = [torch.randint(0, 1 << 20, (4096 * 40,), device="cuda") for _ in range(8)]
    offsets = torch.arange(0, 4096 * 40, 40, device="cuda")
    y = torch.rand(4096, 1, device="cuda")

    def step(_: int) -> None:
        z = torch.cat([t(i, offsets) for t, i in zip(tables, ids, strict=True)], 1)
        loss = F.binary_cross_entropy_with_logits(mlp(z), y)
        sparse_opt.zero_grad(set_to_none=True)
        dense_opt.zero_grad(set_to_none=True)
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
    return step


def pinned_blocking_copies() -> object:
    """The bf16 MLP of overlapped_copies fed 128 MB batches from pinned host memory, each copied with
    non_blocking=False on the compute stream: the host waits for every copy, the GPU for the host."""
    net = _mlp(4096, 4).cuda().to(torch.bfloat16)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    host = [torch.randn(8192, 4096, dtype=torch.bfloat16).pin_memory() for _ in range(2)]
    return _train_at(opt, lambda i: net(host[i % 2].cuda()).float().pow(2).mean())


def compiled_bf16_gpt_train() -> object:
    """8 GPT blocks (d 2048, 16 heads) on 8 x 2048 tokens under torch.compile (default mode) in bf16 autocast with
    fused AdamW: a well-tuned, GEMM-bound training step with flash attention."""
    net = torch.compile(nn.Sequential(*(GptBlock(2048, 16) for _ in range(8))).cuda())
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8, 2048, 2048, device="cuda")
    return _train(opt, lambda: _bf16_square_loss(net, x))


def rl_env_rollout() -> object:
    """A reinforcement-learning rollout: 64 steps of 16 environments simulated on the host in NumPy (about 0.3 ms a
    step), each step's observations copied to the GPU, a 3 x 256 policy MLP sampling actions, the actions copied
    back for the next simulation step."""
    policy = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 8)).cuda()
    rng = np.random.default_rng(0)
    state = rng.standard_normal((16, 64)).astype(np.float32)
    mix = rng.standard_normal((64, 64)).astype(np.float32) / 8

    @torch.no_grad()
    def step(_: int) -> None:
        s = state
        for _t in range(64):
            logits = policy(torch.from_numpy(s).cuda())
            act = torch.distributions.Categorical(logits=logits).sample().cpu().numpy()
            for _k in range(20):  # the environment's physics
                s = np.tanh(s @ mix + act[:, None] * 0.01).astype(np.float32)
    return step


def beam_search_decode() -> object:
    """Beam search (4 beams) of 32 tokens after a 256-token prompt from 8 GPT-style layers (d 1024, bf16): each token
    scores beams x vocabulary, keeps the top 4, reorders every layer's KV cache by the surviving beams
    (index_select, as Hugging Face's _reorder_cache does) and checks for EOS with .item()."""
    n, vocab, beams = 8, 32000, 4
    layer, emb = _growing_cache_layers(n)
    prompt = torch.randint(0, vocab, (beams, 256), device="cuda")

    @torch.no_grad()
    def step(_: int) -> None:
        cache: list[tuple[torch.Tensor, torch.Tensor]] = []
        ids, scores = prompt, torch.zeros(beams, device="cuda")
        for _t in range(32):
            x = emb(ids if not cache else ids[:, -1:])
            for i in range(n):
                x = layer(x, i, cache)
            logp = F.log_softmax((x[:, -1] @ emb.weight.T).float(), -1) + scores[:, None]
            scores, flat = logp.view(-1).topk(beams)
            beam, tok = flat // vocab, flat % vocab
            cache = [(k.index_select(0, beam), v.index_select(0, beam)) for k, v in cache]
            ids = torch.cat([ids.index_select(0, beam), tok[:, None]], 1)
            if (tok == 2).all().item():
                break
    return step


def diffusion_sample_loop() -> object:
    """A small UNet-style denoiser (fp16, batch 1, 64 x 64 latents, 128-256 channels) run for 30 sampling steps per
    step, with the scheduler's coefficients computed in Python and turned into GPU tensors every sampling step."""
    def conv_block(cin: int, cout: int) -> nn.Module:
        return nn.Sequential(nn.GroupNorm(32, cin), nn.SiLU(), nn.Conv2d(cin, cout, 3, padding=1))
    down = nn.Sequential(nn.Conv2d(4, 128, 3, padding=1), conv_block(128, 128), nn.Conv2d(128, 256, 3, 2, 1),
                         conv_block(256, 256), conv_block(256, 256))
    up = nn.Sequential(nn.Upsample(scale_factor=2), conv_block(256, 128), conv_block(128, 128), nn.Conv2d(128, 4, 3,
                                                                                                          padding=1))
    net = nn.Sequential(down, up).cuda().half().eval()
    betas = np.linspace(1e-4, 0.02, 1000)
    alphas = np.cumprod(1 - betas)

    @torch.no_grad()
    def step(_: int) -> None:
        x = torch.randn(1, 4, 64, 64, device="cuda", dtype=torch.float16)
        for t in np.linspace(999, 0, 30).astype(int):
            a = torch.tensor(float(alphas[t]), device="cuda", dtype=torch.float16)
            eps = net(x)
            x = (x - (1 - a).sqrt() * eps) / a.sqrt()
        x.float().mean().item()
    return step


def sparse_grad_big_embedding() -> object:
    """dense_adam_big_embedding's fix: the table with sparse=True, updated by SparseAdam (the MLP by fused AdamW)."""
    emb = nn.Embedding(1 << 21, 256, sparse=True).cuda()
    mlp = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1)).cuda()
    sparse_opt = torch.optim.SparseAdam(list(emb.parameters()), lr=1e-3)
    dense_opt = torch.optim.AdamW(mlp.parameters(), lr=1e-3, fused=True)
    ids = torch.randint(0, 1 << 21, (8192,), device="cuda")

    def step(_: int) -> None:
        sparse_opt.zero_grad(set_to_none=True)
        dense_opt.zero_grad(set_to_none=True)
        mlp(emb(ids)).float().pow(2).mean().backward()
        sparse_opt.step()
        dense_opt.step()
    return step


def dense_adam_big_embedding() -> object:
    """A 2M x 256 token embedding (dense gradients) feeding a 2-layer 1024-wide MLP, trained with fused AdamW on
    batches of 8192 ids: each step's optimizer updates all 512M embedding weights for the 8192 rows looked up."""
    emb = nn.Embedding(1 << 21, 256).cuda()
    mlp = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1)).cuda()
    opt = torch.optim.AdamW(list(emb.parameters()) + list(mlp.parameters()), lr=1e-3, fused=True)
    ids = torch.randint(0, 1 << 21, (8192,), device="cuda")
    return _train(opt, lambda: mlp(emb(ids)).float().pow(2).mean())


def autocast_fp32_weights_decode() -> object:
    """Batch-4 greedy decoding of 32 tokens (static KV cache of 512 positions) from 8 GPT-style layers (d 2048) whose
    weights stay in FP32 while the forward runs under bf16 autocast, as when a training checkpoint is served as is:
    every token casts every weight matrix to bf16 again before its GEMM."""
    return _static_cache_decoder(2048, 16, 8, 512, range(256, 288), torch.float32)


def fp64_model_train() -> object:
    """A 4-layer 2048-wide MLP trained on 8192 rows built in NumPy (float64), the model converted with .double() to
    match the inputs (the usual fix for 'expected scalar type Double'): every GEMM runs in FP64."""
    net = _mlp(2048, 4).cuda().double()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((8192, 2048))).cuda()
    return _train(opt, lambda: net(x).pow(2).mean())


def clip_grad_per_param() -> object:
    """A 24-layer 512-wide transformer-style stack trained in bf16 autocast with fused AdamW, its gradients clipped
    every step by clip_grad_norm_(foreach=False): one norm kernel per parameter, then one scale kernel per
    parameter."""
    return _clipped(foreach=False)


class _CopyAttnBlock(nn.Module):
    """A GPT block written as older model code does: heads split and merged with transpose().contiguous() and the
    attention computed by SDPA on the copies."""

    def __init__(self, d: int, h: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.h = h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        y = self.ln1(x)
        q, k, v = (m(y).view(b, t, self.h, d // self.h).transpose(1, 2).contiguous() for m in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.o(a)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def contiguous_copies_attention() -> object:
    """6 _CopyAttnBlocks (d 1024, 16 heads) trained on 8 x 1024 tokens in bf16 autocast with fused AdamW."""
    net = nn.Sequential(*(_CopyAttnBlock(1024, 16) for _ in range(6))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8, 1024, 1024, device="cuda")
    return _train(opt, lambda: _bf16_square_loss(net, x))


def eval_accuracy_item() -> object:
    """An evaluation loop over 32 batches of 256 images (a ResNet-style bf16 channels_last conv net): each batch's
    correct count read with .item() into a Python total."""
    def block(c: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
    net = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3), block(64), block(64), nn.Conv2d(64, 128, 3, 2, 1), block(128),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000))
    net = net.cuda().eval().to(memory_format=torch.channels_last)
    xs = [torch.randn(256, 3, 64, 64, device="cuda").to(memory_format=torch.channels_last) for _ in range(32)]
    ys = [torch.randint(0, 1000, (256,), device="cuda") for _ in range(32)]

    @torch.no_grad()
    def step(_: int) -> None:
        correct = 0
        for x, y in zip(xs, ys, strict=True):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                correct += (net(x).argmax(1) == y).sum().item()
    return step


def fp32_tf32_model_train() -> object:
    """fp64_model_train's fix: the same MLP and rows in FP32 with TF32 matmuls (the NumPy rows converted once)."""
    torch.backends.cuda.matmul.allow_tf32 = True
    net = _mlp(2048, 4).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((8192, 2048))).float().cuda()
    return _train(opt, lambda: net(x).pow(2).mean())


def _clipped(foreach: bool) -> object:
    net = nn.Sequential(*(GptBlock(512, 8) for _ in range(24))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8, 256, 512, device="cuda")

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        _bf16_square_loss(net, x).backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0, foreach=foreach)
        opt.step()
    return step


def clip_grad_foreach() -> object:
    """clip_grad_per_param's fix: the same step with clip_grad_norm_(foreach=True)."""
    return _clipped(foreach=True)


def ema_per_param() -> object:
    """A 24-layer 512-wide transformer-style stack trained in bf16 autocast with fused AdamW, keeping an exponential
    moving average of its weights updated parameter by parameter after each step, as diffusers' EMAModel does with
    foreach=False (s.sub_((1 - decay) * (s - p)))."""
    net = nn.Sequential(*(GptBlock(512, 8) for _ in range(24))).cuda()
    ema = [p.detach().clone() for p in net.parameters()]
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8, 256, 512, device="cuda")

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        _bf16_square_loss(net, x).backward()
        opt.step()
        with torch.no_grad():
            for s, p in zip(ema, net.parameters(), strict=True):
                s.sub_((1 - 0.999) * (s - p))
    return step


def _static_cache_decoder(d: int, h: int, n: int, t_max: int, positions: range, weights: torch.dtype
                          ) -> Callable[[int], None]:
    """Batch-4 greedy decoding at `positions` of a static KV cache of `t_max` positions, from n GPT-style layers (d, h
    heads) under bf16 autocast, the weights held in `weights`."""
    mods = nn.ModuleList(nn.ModuleList((nn.Linear(d, 3 * d), nn.Linear(d, d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)))
                         for _ in range(n)).cuda().to(weights)
    cache = [(torch.zeros(4, h, t_max, d // h, device="cuda", dtype=torch.bfloat16),
              torch.zeros(4, h, t_max, d // h, device="cuda", dtype=torch.bfloat16)) for _ in range(n)]
    x0 = torch.randn(4, 1, d, device="cuda", dtype=weights)

    @torch.no_grad()
    def step(_: int) -> None:
        x = x0
        with torch.autocast("cuda", dtype=torch.bfloat16):
            for pos in positions:
                for (qkv, proj, fc1, fc2), (kc, vc) in zip(mods, cache, strict=True):
                    q, k, v = qkv(F.layer_norm(x, (d,))).view(4, 1, 3, h, d // h).permute(2, 0, 3, 1, 4)
                    kc[:, :, pos], vc[:, :, pos] = k[:, :, 0], v[:, :, 0]
                    a = F.scaled_dot_product_attention(q, kc[:, :, :pos + 1], vc[:, :, :pos + 1])
                    x = x + proj(a.transpose(1, 2).reshape(4, 1, d))
                    x = x + fc2(F.gelu(fc1(F.layer_norm(x, (d,)))))
        x.float().sum().item()
    return step


def _wide_decoder(weights: torch.dtype) -> Callable[[int], None]:
    """Batch-4 greedy decoding of 16 tokens (static KV cache of 256 positions) from 4 wide layers (d 4096, 32 heads)
    under bf16 autocast, the weights held in `weights`."""
    return _static_cache_decoder(4096, 32, 4, 256, range(128, 144), weights)


def autocast_fp32_weights_wide_decode() -> object:
    """_wide_decoder with FP32 weights (a training checkpoint served as is): autocast casts every 4096-wide weight
    matrix to bf16 again for each token, before the GEMM reads the copy."""
    return _wide_decoder(torch.float32)


def bf16_weights_wide_decode() -> object:
    """autocast_fp32_weights_wide_decode's fix: the weights converted to bf16 once (model.to(torch.bfloat16))."""
    return _wide_decoder(torch.bfloat16)


def sdpa_float_mask_train() -> object:
    """4 GPT-style layers (d 1024, 16 heads) trained on 8 x 1024 tokens in bf16 autocast whose attention passes a
    float additive mask (a padding mask turned into -inf biases, as many ported models do) to
    scaled_dot_product_attention instead of is_causal."""
    d, h = 1024, 16
    layers = nn.ModuleList(nn.ModuleList((nn.Linear(d, 3 * d), nn.Linear(d, d), nn.Linear(d, 4 * d),
                                          nn.Linear(4 * d, d))) for _ in range(4)).cuda()
    opt = torch.optim.AdamW(layers.parameters(), lr=1e-4, fused=True)
    x0 = torch.randn(8, 1024, d, device="cuda")
    mask = torch.full((1024, 1024), float("-inf"), device="cuda").triu(1)[None, None].expand(8, 1, 1024, 1024)

    def loss() -> torch.Tensor:
        x = x0
        with torch.autocast("cuda", dtype=torch.bfloat16):
            for qkv, proj, fc1, fc2 in layers:
                q, k, v = qkv(F.layer_norm(x, (d,))).view(8, 1024, 3, h, d // h).permute(2, 0, 3, 1, 4)
                a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.dtype))
                x = x + proj(a.transpose(1, 2).reshape(8, 1024, d))
                x = x + fc2(F.gelu(fc1(F.layer_norm(x, (d,)))))
            return x.float().pow(2).mean()
    return _train(opt, loss)


def generate_without_cache() -> object:
    """hf_style_generate's model and loop with the KV cache off (use_cache=False): every token runs the 8 layers
    over the whole sequence so far (512 to 559 tokens) to get one new token."""
    n = 8
    layer, emb = _growing_cache_layers(n)
    prompt = torch.randint(0, 32000, (4, 512), device="cuda")

    @torch.no_grad()
    def step(_: int) -> None:
        ids, done = prompt, torch.zeros(4, dtype=torch.bool, device="cuda")
        for _t in range(48):
            x, cache = emb(ids), []  # a fresh cache each token: nothing is reused
            for i in range(n):
                x = layer(x, i, cache)
            nxt = (x[:, -1] @ emb.weight.T).argmax(-1)
            done |= nxt == 2
            ids = torch.cat([ids, nxt[:, None]], 1)
            if done.all().item():
                break
    return step


def _row_l2norm_kernel() -> Callable[..., object]:
    """A hand-written Triton kernel that L2-normalizes each row of a matrix: one program per row, looping over the
    row twice (sum of squares, then scale), as a first Triton kernel usually does."""
    import triton
    import triton.language as tl

    @triton.jit
    def row_l2norm(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        base = tl.program_id(0).to(tl.int64) * n_cols
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + base + cols, mask=cols < n_cols, other=0.0)
            acc += v * v
        inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) + 1e-12)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            m = cols < n_cols
            tl.store(y_ptr + base + cols, tl.load(x_ptr + base + cols, mask=m, other=0.0) * inv, mask=m)
    return row_l2norm  # type: ignore[no-any-return]


def triton_row_norm_few_rows() -> object:
    """8 rows of 2M FP32 values (8 long per-sample vectors: gradients, embeddings) L2-normalized 10 times per step by
    a hand-written Triton kernel launched with one program per row: a grid of 8 blocks on a 132-SM GPU."""
    kernel = _row_l2norm_kernel()
    x = torch.randn(8, 1 << 21, device="cuda")
    y = torch.empty_like(x)

    def step(_: int) -> None:
        for _k in range(10):
            kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=1024)  # type: ignore[index]
    return step


def torch_row_norm() -> object:
    """triton_row_norm_few_rows' fix: the same normalization by F.normalize (ATen's reduction splits each row over
    many blocks)."""
    x = torch.randn(8, 1 << 21, device="cuda")

    def step(_: int) -> None:
        for _k in range(10):
            F.normalize(x, dim=1)
    return step


def _serving_model() -> tuple[nn.Module, nn.Module]:
    """4 GPT blocks (d 1024, bf16) and their token embedding, for the request-batching probes."""
    net = nn.Sequential(*(GptBlock(1024, 16) for _ in range(4))).cuda().to(torch.bfloat16).eval()
    return net, nn.Embedding(32000, 1024).cuda().to(torch.bfloat16)


def _requests(n: int = 64) -> list[list[int]]:
    rng = np.random.default_rng(0)
    return [rng.integers(1, 32000, int(rng.integers(64, 129))).tolist() for _ in range(n)]


def per_request_input_tensors() -> object:
    """A serving step over 64 requests of 64-128 tokens: each request's token ids and positions are made into GPU
    tensors one by one (torch.tensor(list, device='cuda'), 128 small pageable copies), padded on the GPU, then 4 GPT
    blocks (d 1024, bf16) run on the batch: the host feeds the GPU a few hundred bytes at a time."""
    net, emb = _serving_model()
    reqs = _requests()

    @torch.no_grad()
    def step(_: int) -> None:
        ids = [torch.tensor(r, device="cuda") for r in reqs]
        pos = [torch.tensor(list(range(len(r))), device="cuda") for r in reqs]
        batch = nn.utils.rnn.pad_sequence(ids, batch_first=True)
        p = nn.utils.rnn.pad_sequence(pos, batch_first=True)
        net(emb(batch) + emb(p)).float().mean().item()
    return step


def batched_input_tensor() -> object:
    """per_request_input_tensors' fix: the padded ids and positions built in one pinned host array and copied once,
    non-blocking."""
    net, emb = _serving_model()
    reqs = _requests()
    width = max(len(r) for r in reqs)
    host = torch.zeros(2, len(reqs), width, dtype=torch.int64).pin_memory()

    @torch.no_grad()
    def step(_: int) -> None:
        for i, r in enumerate(reqs):
            host[0, i, :len(r)] = torch.tensor(r)
            host[1, i, :len(r)] = torch.arange(len(r))
        batch, p = host.cuda(non_blocking=True)
        net(emb(batch) + emb(p)).float().mean().item()
    return step


class HeadLoopBlock(GptBlock):
    """A GPT block whose attention loops over its heads in Python, as some ported vision and speech models do: one
    small score GEMM, softmax and value GEMM per head."""
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        heads = [F.softmax(q[:, i] @ k[:, i].transpose(-2, -1) / (d // self.h) ** 0.5, dim=-1) @ v[:, i]
                 for i in range(self.h)]
        x = x + self.proj(torch.cat(heads, dim=-1))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def _vit_encoder(block: type[GptBlock]) -> Callable[[int], None]:
    """6 `block`s (d 768, 12 heads) in FP16 answering a batch of 8 requests of 197 tokens per step."""
    net = nn.Sequential(*(block(768, 12) for _ in range(6))).cuda().half().eval()
    x = torch.randn(8, 197, 768, device="cuda", dtype=torch.half)

    @torch.no_grad()
    def step(_: int) -> None:
        net(x).float().mean().item()
    return step


def attention_loop_over_heads() -> object:
    """A ViT-style encoder (6 HeadLoopBlocks, d 768, 12 heads, 197 tokens, batch 8) answering requests in FP16: each
    head's attention is its own small GEMMs and softmax."""
    return _vit_encoder(HeadLoopBlock)


def attention_heads_batched() -> object:
    """attention_loop_over_heads' fix: the same encoder with all heads in one scaled_dot_product_attention call
    (GptBlock, not causal here: the ViT attends to every token)."""
    class Enc(GptBlock):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
    return _vit_encoder(Enc)


def dataparallel_train() -> object:
    """8 GPT blocks (d 1024) trained with nn.DataParallel over every visible GPU (2), bf16 autocast, fused AdamW,
    8 x 1024 tokens per step: each step replicates the model from GPU 0, scatters the batch, gathers the outputs
    and reduces the gradients on GPU 0 in one process, as older training scripts do (DDP is the fix)."""
    net = nn.DataParallel(nn.Sequential(*(GptBlock(1024, 16) for _ in range(8))).cuda())
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8, 1024, 1024, device="cuda")
    return _train(opt, lambda: _bf16_square_loss(net, x))


def _eval_mlp() -> tuple[nn.Module, torch.Tensor]:
    """A 3 x 2048 MLP in bf16 with a 1000-class head, and 100 batches of 512 rows to evaluate."""
    net = nn.Sequential(nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(),
                        nn.Linear(2048, 1000)).cuda().to(torch.bfloat16).eval()
    return net, torch.randn(100, 512, 1024, device="cuda", dtype=torch.bfloat16)


def eval_cat_accumulate() -> object:
    """An evaluation loop over 100 batches of 512 rows (a 3 x 2048 MLP in bf16 with a 1000-class FP32 head) that
    collects the logits with torch.cat after every batch, as many metric scripts do: each cat copies everything
    collected so far, so the copies grow with the square of the batches."""
    net, xs = _eval_mlp()

    @torch.no_grad()
    def step(_: int) -> None:
        out = torch.empty(0, 1000, device="cuda")
        for x in xs:
            out = torch.cat([out, net(x).float()])
        out.argmax(1).sum().item()
    return step


def eval_list_then_cat() -> object:
    """eval_cat_accumulate's fix: the logits appended to a list and concatenated once."""
    net, xs = _eval_mlp()

    @torch.no_grad()
    def step(_: int) -> None:
        torch.cat([net(x).float() for x in xs]).argmax(1).sum().item()
    return step


def _small_cnn() -> nn.Module:
    """A small FP16 image classifier: a stem and 4 bottleneck blocks (256 channels) over 112 x 112 inputs."""
    return nn.Sequential(nn.Conv2d(3, 256, 7, stride=4, padding=3), *(Bottleneck(256) for _ in range(4)),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 1000)).cuda().half().eval()


def per_sample_infer_loop() -> object:
    """A batch of 32 images classified one at a time, net(x[i:i + 1]) in a Python loop over the batch (as code written
    for one request at a time and then fed a batch does): about 30 small kernels per image."""
    net = _small_cnn()
    x = torch.randn(32, 3, 112, 112, device="cuda", dtype=torch.half)

    @torch.no_grad()
    def step(_: int) -> None:
        torch.cat([net(x[i:i + 1]) for i in range(x.size(0))]).argmax(1).cpu()
    return step


def per_sample_batched() -> object:
    """per_sample_infer_loop's fix: the 32 images in one call."""
    net = _small_cnn()
    x = torch.randn(32, 3, 112, 112, device="cuda", dtype=torch.half)

    @torch.no_grad()
    def step(_: int) -> None:
        net(x).argmax(1).cpu()
    return step


def rows_iter_infer_loop() -> object:
    """per_sample_infer_loop written as `for img in x` (Python iterates a tensor through one aten::unbind, so no
    per-row indexing op is recorded)."""
    net = _small_cnn()
    x = torch.randn(32, 3, 112, 112, device="cuda", dtype=torch.half)

    @torch.no_grad()
    def step(_: int) -> None:
        torch.cat([net(img[None]) for img in x]).argmax(1).cpu()
    return step


class LoopGru(nn.Module):
    """A GRU language model whose recurrence is an nn.GRUCell stepped over time in Python (x[:, t])."""
    def __init__(self, vocab: int, d: int) -> None:
        super().__init__()
        self.emb, self.cell, self.head = nn.Embedding(vocab, d), nn.GRUCell(d, d), nn.Linear(d, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)
        h = x.new_zeros(x.size(0), x.size(2))
        out = []
        for t in range(x.size(1)):
            h = self.cell(x[:, t], h)
            out.append(h)
        return self.head(torch.stack(out, 1))


def gru_cell_loop_train() -> object:
    """A GRU language model (hidden 512, 8K vocabulary) trained on 32 sequences of 64 tokens, its recurrence an
    nn.GRUCell in a Python loop over the time steps (FP32, Adam foreach)."""
    net = LoopGru(8192, 512).cuda()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, foreach=True)
    idx = torch.randint(0, 8192, (32, 64), device="cuda")
    return _train(opt, lambda: F.cross_entropy(net(idx).view(-1, 8192), idx.view(-1)))


def gru_cudnn_train() -> object:
    """gru_cell_loop_train's fix: the same model with nn.GRU running all 64 time steps in one cuDNN call."""
    emb, rnn = nn.Embedding(8192, 512).cuda(), nn.GRU(512, 512, batch_first=True).cuda()
    head = nn.Linear(512, 8192).cuda()
    opt = torch.optim.Adam([*emb.parameters(), *rnn.parameters(), *head.parameters()], lr=1e-3, foreach=True)
    idx = torch.randint(0, 8192, (32, 64), device="cuda")
    return _train(opt, lambda: F.cross_entropy(head(rnn(emb(idx))[0]).reshape(-1, 8192), idx.view(-1)))


def _split_gpt(n: int = 24, d: int = 2048) -> tuple[nn.Module, nn.Module]:
    """n GPT blocks (d 2048) in FP16, the first half on cuda:0 and the second on cuda:1, as device_map='auto' places
    a model too large for one GPU."""
    first = nn.Sequential(*(GptBlock(d, 16) for _ in range(n // 2))).to("cuda:0").half().eval()
    second = nn.Sequential(*(GptBlock(d, 16) for _ in range(n // 2))).to("cuda:1").half().eval()
    return first, second


def device_map_two_gpu_infer() -> object:
    """24 GPT blocks split over 2 GPUs in one process (layers 0-11 on cuda:0, 12-23 on cuda:1) answering a batch of
    8 x 1024 tokens: the hidden states cross to cuda:1 halfway, so each GPU waits while the other works."""
    first, second = _split_gpt()
    x = torch.randn(8, 1024, 2048, device="cuda:0", dtype=torch.half)

    @torch.no_grad()
    def step(_: int) -> None:
        second(first(x).to("cuda:1")).float().mean().item()
    return step


def _split_gpt_micro(size: int) -> Callable[[int], None]:
    """_split_gpt answering a batch of 8 x 1024 tokens in micro-batches of `size` sequences, each handed to cuda:1 as
    soon as cuda:0 is done with it."""
    first, second = _split_gpt()
    x = torch.randn(8, 1024, 2048, device="cuda:0", dtype=torch.half)

    @torch.no_grad()
    def step(_: int) -> None:
        outs = [second(first(mb).to("cuda:1")) for mb in x.split(size)]
        torch.cat(outs).float().mean().item()
    return step


def device_map_two_gpu_pipelined() -> object:
    """device_map_two_gpu_infer with the batch in 8 micro-batches of 1, so both GPUs can work at once."""
    return _split_gpt_micro(1)



def device_map_two_gpu_replicas() -> object:
    """device_map_two_gpu_infer's fix where the model fits on one GPU: a replica of all 24 blocks on each GPU, each
    answering half of the batch (4 x 1024 tokens) at the same time."""
    reps = [nn.Sequential(*(GptBlock(2048, 16) for _ in range(24))).to(f"cuda:{i}").half().eval() for i in range(2)]
    xs = [torch.randn(4, 1024, 2048, device=f"cuda:{i}", dtype=torch.half) for i in range(2)]

    @torch.no_grad()
    def step(_: int) -> None:
        outs = [rep(x) for rep, x in zip(reps, xs, strict=True)]
        sum(o.float().mean().item() for o in outs)
    return step


def device_map_two_gpu_microbatch4() -> object:
    """device_map_two_gpu_pipelined with 2 micro-batches of 4 sequences."""
    return _split_gpt_micro(4)


def _offload_blocks(n: int = 16, d: int = 2048) -> list[nn.Module]:
    """n GPT blocks (d 2048) in FP16 kept in host memory, as sequential CPU offload keeps a model too large for the
    GPU (accelerate's cpu_offload, diffusers' enable_sequential_cpu_offload)."""
    return [GptBlock(d, 16).half().eval() for _ in range(n)]


def sequential_offload_infer() -> object:
    """16 GPT blocks (d 2048, FP16, 1.6 GB of weights) whose weights live in pinned host memory and are copied into one
    GPU-resident block before each layer runs (non_blocking), for a batch of 4 x 512 tokens: every step moves the
    whole model across PCIe, as sequential CPU offload does."""
    host = [[p.detach().pin_memory() for p in b.parameters()] for b in _offload_blocks()]
    shell = GptBlock(2048, 16).half().cuda().eval()
    x = torch.randn(4, 512, 2048, device="cuda", dtype=torch.half)

    @torch.no_grad()
    def step(_: int) -> None:
        h = x
        for weights in host:
            for dst, src in zip(shell.parameters(), weights, strict=True):
                dst.copy_(src, non_blocking=True)
            h = shell(h)
        h.float().mean().item()
    return step


def resident_weights_infer() -> object:
    """sequential_offload_infer's fix where the model fits: the 16 blocks kept on the GPU."""
    blocks = [b.cuda() for b in _offload_blocks()]
    x = torch.randn(4, 512, 2048, device="cuda", dtype=torch.half)

    @torch.no_grad()
    def step(_: int) -> None:
        h = x
        for b in blocks:
            h = b(h)
        h.float().mean().item()
    return step


def _small_mlp_requests() -> tuple[nn.Module, torch.Tensor]:
    """A 6 x 1024 MLP in FP16 and a batch of 8 requests: small kernels, a host-paced step."""
    net = nn.Sequential(*(m for _ in range(6) for m in (nn.Linear(1024, 1024), nn.GELU()))).cuda().half().eval()
    return net, torch.randn(8, 1024, device="cuda", dtype=torch.half)


def eval_with_autograd() -> object:
    """Requests answered 32 at a time per step through a small FP16 MLP without torch.no_grad(): autograd records a
    graph for every op (the weights require grad) and keeps the activations alive until the output is dropped."""
    net, x = _small_mlp_requests()

    def step(_: int) -> None:
        for _r in range(32):
            net(x).argmax(1)
        torch.cuda.synchronize()
    return step


def eval_inference_mode() -> object:
    """eval_with_autograd's fix: the same requests under torch.inference_mode()."""
    net, x = _small_mlp_requests()

    @torch.inference_mode()
    def step(_: int) -> None:
        for _r in range(32):
            net(x).argmax(1)
        torch.cuda.synchronize()
    return step


def _offload_train(offload: bool) -> Callable[[int], None]:
    """8 GPT blocks (d 1024) trained in bf16 autocast on 8 x 1024 tokens with fused AdamW, the activations saved for
    backward kept in pinned host memory (torch.autograd.graph.save_on_cpu) when `offload`."""
    net = nn.Sequential(*(GptBlock(1024, 16) for _ in range(8))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8, 1024, 1024, device="cuda")

    def loss() -> torch.Tensor:
        if not offload:
            return _bf16_square_loss(net, x)
        with torch.autograd.graph.save_on_cpu(pin_memory=True):
            return _bf16_square_loss(net, x)
    return _train(opt, loss)


def activation_offload_train() -> object:
    """A training step whose saved activations go to pinned host memory in forward and come back in backward."""
    return _offload_train(True)


def activation_resident_train() -> object:
    """activation_offload_train's fix where the activations fit: they stay on the GPU."""
    return _offload_train(False)

PROBES = {f.__name__: f for f in (
    loader_transform, bf16_mlp_train, graph_replay_infer, many_params_adamw, compiled_train, flash_attention_train,
    amp_gradscaler_train, cpu_offload_optimizer, greedy_decode, channels_last_amp_cnn, embedding_recsys,
    checkpoint_every_step, metrics_on_host, fp32_cnn_no_tf32, well_fed_loader, pageable_input, topp_sampling_decode,
    grad_accum_item, small_encoder_infer_stack, boolean_mask_loss, compiled_reduce_overhead_train, python_layernorm,
    overlapped_copies, sync_timing_loop, cudnn_benchmark_varshape, decode_graph_replay, decode_eager,
    slow_collate_workers, tokenize_then_infer, large_vocab_loss, resnet_infer_bs1, moe_python_loop,
    math_attention_train, gpt2_vocab_50257, gpt2_vocab_50304, grad_checkpoint_train, gnn_message_passing, lstm_train,
    fp32_gpt_train, sdpa_attention_train, cpu_layer_left_behind, hf_style_generate, sparse_embedding_adam,
    pinned_blocking_copies, compiled_bf16_gpt_train, rl_env_rollout, beam_search_decode, diffusion_sample_loop,
    dense_adam_big_embedding, autocast_fp32_weights_decode, fp64_model_train, clip_grad_per_param,
    contiguous_copies_attention, eval_accuracy_item, fp32_tf32_model_train, clip_grad_foreach, ema_per_param,
    autocast_fp32_weights_wide_decode, bf16_weights_wide_decode, sdpa_float_mask_train, sparse_grad_big_embedding,
    generate_without_cache, triton_row_norm_few_rows, torch_row_norm, per_request_input_tensors, batched_input_tensor,
    attention_loop_over_heads, attention_heads_batched, dataparallel_train, eval_cat_accumulate, eval_list_then_cat,
    per_sample_infer_loop, per_sample_batched, rows_iter_infer_loop, gru_cell_loop_train, gru_cudnn_train,
    device_map_two_gpu_infer, device_map_two_gpu_pipelined, device_map_two_gpu_replicas,
    device_map_two_gpu_microbatch4, sequential_offload_infer, resident_weights_infer, eval_with_autograd,
    eval_inference_mode, activation_offload_train, activation_resident_train)}
WITH_STACK = {"small_encoder_infer_stack"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--variant", choices=("default", "plain", "full"), default="default",
                    help="plain: torch.profiler's defaults (no shapes); full: shapes, memory, stacks, modules, FLOPs")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    options = {"plain": {"record_shapes": False},
               "full": {"profile_memory": True, "with_modules": True, "with_flops": True}}.get(args.variant, {})
    suffix = "" if args.variant == "default" else f".{args.variant}"
    for name in args.names or list(PROBES):
        torch.manual_seed(0)
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False  # PyTorch's defaults
        torch.backends.cudnn.benchmark = False
        profile_steps(PROBES[name](), os.path.join(args.out, f"{name}{suffix}.json.gz"),  # type: ignore[arg-type]
                      with_stack=name in WITH_STACK or args.variant == "full", **options)
        torch.cuda.empty_cache()
        print(name, "ok", flush=True)


if __name__ == "__main__":
    main()
