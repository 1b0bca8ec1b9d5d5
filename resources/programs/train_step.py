"""A small training loop: a batch copied in on its own stream from pinned memory while the
previous batch trains, forward, backward and an optimizer step on the default stream.

Capture its third step: ``swimlanes capture --range step:3 -- python train_step.py``.
"""

import torch

from swimlanes.gpu.capture import region

torch.manual_seed(0)
cuda = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)
).to(cuda)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
batches = [torch.randn(512, 1024).pin_memory() for _ in range(6)]
copy_stream = torch.cuda.Stream()


def load(k: int) -> torch.Tensor:
    with torch.cuda.stream(copy_stream):
        return batches[k].to(cuda, non_blocking=True)


nxt = load(0)
for k in range(5):
    with region("step"):
        torch.cuda.current_stream().wait_stream(copy_stream)
        batch = nxt
        nxt = load(k + 1)
        loss = model(batch).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
