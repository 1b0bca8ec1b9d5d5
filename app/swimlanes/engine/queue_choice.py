"""The preset's ``queue_choice`` "free": which Hyper-Q connection queue an op joins as it
reaches the GPU (its call returned), rather than its stream's fixed queue.

The rule (the reference simulator's ``Simulation.hardware_queue`` says the same plainly, and
the compiled core's ``host.choose_queue`` does the same over its tables): an op whose stream
has an op waiting in a connection queue joins that queue (stream order); else it takes the
lowest-numbered empty connection queue; else (every connection queue's head is held) the
next queue of a round-robin over the connection queues, which starts at the first and
advances on each such choice. Measured on the H100 and H200 hosts (driver 580, 2026-11-25,
benchmarks/probes/queue_sharing.py): a stream's op waited behind another stream's held op
only when it was issued while every queue held one.
"""

from __future__ import annotations


class FreeQueues:
    """The free choice among the connection queues 1 .. ``top`` of one simulation.

    It links each op into its queue's chain (``next_in_queue``) as it joins, since the chains
    of these queues are not known before the run. ``waiting[s]`` counts stream ``s``'s ops in
    these queues: whoever takes an op out of one of them (queues.make_drain, the event loop's
    hinted heads) takes one off.
    """

    __slots__ = ("top", "queue_len", "next_in_queue", "tail", "waiting", "queue_of", "turn")

    def __init__(
        self, top: int, queue_len: list[int], next_in_queue: memoryview, n_streams: int
    ) -> None:
        self.top = top
        self.queue_len, self.next_in_queue = queue_len, next_in_queue
        self.tail = [-1] * (top + 1)  # each connection queue's last op to join
        self.waiting = [0] * n_streams
        self.queue_of = [0] * n_streams  # the queue of each stream's waiting ops
        self.turn = 0  # the round-robin's next queue, less one

    def choose(self, i: int, s: int) -> int:
        """The queue op ``i`` of stream ``s`` joins now (and its link into that queue)."""
        if self.waiting[s]:
            q = self.queue_of[s]
        else:
            lengths, top = self.queue_len, self.top
            q = 1
            while q <= top and lengths[q]:
                q += 1
            if q > top:  # every queue holds an op: round-robin
                q = 1 + self.turn
                self.turn = q % top
            self.queue_of[s] = q
        self.waiting[s] += 1
        if self.queue_len[q]:
            self.next_in_queue[self.tail[q]] = i
        self.tail[q] = i
        return q
