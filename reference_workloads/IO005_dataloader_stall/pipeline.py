"""Shared by IO005 baseline and optimized: a synthetic image dataset whose
__getitem__ does real CPU work (decode-like synthesis, normalization, a 3x3 box
blur in NumPy: roughly a millisecond per 64x64 sample) and a small CNN trained on it."""

import numpy as np
import torch


class SyntheticImages(torch.utils.data.Dataset):
    def __init__(self, n: int, size: int = 64):
        self.n, self.size = n, size
        base = np.arange(3 * size * size, dtype=np.float32).reshape(3, size, size)
        self.base = base

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, idx: int):
        img = (self.base * float(idx % 13 + 1)) % 255.0  # "decode"
        img = (img / 255.0 - 0.5) / 0.25  # normalize
        p = np.pad(img, ((0, 0), (1, 1), (1, 1)), mode="edge")  # 3x3 box blur
        s = self.size
        blur = sum(p[:, i : i + s, j : j + s] for i in range(3) for j in range(3)) / 9.0
        if idx % 2:
            blur = blur[:, :, ::-1]  # "augment": flip
        return torch.from_numpy(np.ascontiguousarray(blur, dtype=np.float32)), idx % 10


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.f = torch.nn.Sequential(
            torch.nn.Conv2d(3, 128, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.Conv2d(128, 256, 3, stride=2, padding=1),
            torch.nn.ReLU(),
            torch.nn.Conv2d(256, 512, 3, stride=2, padding=1),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(512, 10),
        )

    def forward(self, x):
        return self.f(x)


def _worker_init(_):
    torch.set_num_threads(1)


def make(num_workers: int, pin_memory: bool, batch: int, batches: int):
    loader = torch.utils.data.DataLoader(
        SyntheticImages(batch * batches),
        batch_size=batch,
        shuffle=False,
        num_workers=num_workers,
        pin_memory=pin_memory,
        prefetch_factor=4 if num_workers else None,
        persistent_workers=num_workers > 0,
        worker_init_fn=_worker_init if num_workers else None,
    )
    torch.manual_seed(0)
    model = SmallCNN().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    return loader, model, opt
