"""A program that marks its steps with NVTX only, as profiled PyTorch code often does.

Step k runs k + 1 elementwise kernels. ``swimlanes capture --range step:2 -- python
nvtx_steps.py`` keeps the second step: three kernels, and the copy back that ends it.
"""

import torch

x = torch.ones(1 << 20, device="cuda")
for k in range(3):
    torch.cuda.nvtx.range_push("step")
    for _ in range(k + 1):
        x = x * 1.5
    total = x.sum().item()  # one more kernel and a copy back; the step ends after it
    torch.cuda.nvtx.range_pop()
print(f"sum {total:.3g}")
