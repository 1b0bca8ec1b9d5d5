"""A pipeline with several host threads on one device is refused by the executor (not run yet
on a host thread per thread), with a message saying so."""

from __future__ import annotations

import pytest

from swimlanes.gpu.errors import GpuError
from swimlanes.gpu.executor import execute
from swimlanes.model.generators_threads import per_thread_streams_pipeline


def test_running_several_host_threads_is_refused_clearly() -> None:
    with pytest.raises(GpuError, match=r"several host threads on one device \(worker0, worker1\)"):
        execute(per_thread_streams_pipeline())
