"""ME011 optimized: the baseline's model and input in the channels_last memory format (NHWC in memory): cuDNN's
convolutions read and write it directly and no layout conversion runs.

The baseline: a ResNet-style conv net (7x7 stem, 3x3 conv/BN/ReLU blocks at 64 and 128 channels) trained with
bf16 autocast and SGD on 256 x 3 x 224 x 224 images in PyTorch's default NCHW layout. cuDNN's tensor-core convolutions
run NHWC, so it transposes each convolution's input to NHWC and its output back (nchwToNhwcKernel /
nhwcToNchwKernel): extra memory-bound passes over every activation, forward and backward."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NAME = "ME011_nchw_layout_transposes/optimized"
LAYOUT = torch.channels_last  # the fix: NHWC in memory


def block(c: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True))


def build(args):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                        nn.MaxPool2d(3, 2, 1), block(64), block(64), nn.Conv2d(64, 128, 3, stride=2, padding=1),
                        block(128), block(128), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000))
    net = net.cuda().to(memory_format=LAYOUT)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, foreach=True)
    x = refwl.randn(args.batch, 3, args.size, args.size, seed=1).contiguous(memory_format=LAYOUT)
    y = torch.randint(0, 1000, (args.batch,), device="cuda", generator=torch.Generator("cuda").manual_seed(2))
    out = {}

    def step(i):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        out["loss"] = loss

    return refwl.Workload(
        step=step,
        check=lambda: out["loss"].item(),
        notes={"batch": args.batch, "size": args.size, "layout": str(LAYOUT), "dtype": "bf16 autocast"},
    )


def add_args(ap):
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
