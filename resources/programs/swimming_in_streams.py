"""Swimming in streams (PyTorch): matmuls on one stream, copies to and from the host on two
others. Which version overlaps better: non_blocking copies, or blocking ones?

Capture it: ``swimlanes capture --range non_blocking -- python swimming_in_streams.py``
(or ``--range blocking``), then open the run in Swimlanes and edit the rebuilt pipeline.
"""

import torch

from swimlanes.gpu.capture import region

cpu, cuda = torch.device("cpu"), torch.device("cuda")
first_stream, second_stream, third_stream = (torch.cuda.Stream() for _ in range(3))

data_on_gpu = [torch.rand((1024, 1024), device=cuda) for _ in range(30)]
data_on_cpu = [torch.rand((1024, 1024), device=cpu) for _ in range(30)]
matrix_on_gpu = [torch.rand((1024, 1024), device=cuda) for _ in range(200)]


def run(non_blocking: bool) -> None:
    with torch.cuda.stream(first_stream):
        for m in matrix_on_gpu:
            torch.matmul(m, m)
    with torch.cuda.stream(second_stream):
        for d in data_on_gpu:
            d.to(cpu, non_blocking=non_blocking)
    with torch.cuda.stream(third_stream):
        for d in data_on_cpu:
            d.to(cuda, non_blocking=non_blocking)
    torch.cuda.synchronize()


run(True)  # warm-up: cuBLAS handles, the caching allocator
with region("non_blocking"):
    run(True)
with region("blocking"):
    run(False)
