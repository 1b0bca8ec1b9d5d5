"""How the executor turns timed repetitions into one measured timeline (no GPU needed)."""

from __future__ import annotations

import numpy as np

from swimlanes.gpu.executor import median_repetition
from swimlanes.timeline.timeline import NO_TIME, device_span_ns


def test_the_median_repetition_is_the_one_with_the_mediandevice_span_ns() -> None:
    assert median_repetition([300, 100, 200]) == 2
    assert median_repetition([5, 9, 1, 7, 3]) == 0
    assert median_repetition([40, 10]) == 1  # even count: the lower middle one
    assert median_repetition([7]) == 0


def test_a_repetition_schedule_is_kept_whole_not_mixed_per_op() -> None:
    # Two copies ready at once that the copy engine ran in either order: per-op medians over
    # these three repetitions would show both at 0..160, overlapping, which never happened.
    reps = [
        (np.array([0, 160]), np.array([160, 320])),
        (np.array([160, 0]), np.array([320, 160])),
        (np.array([0, 160]), np.array([160, 330])),
    ]
    spans = [device_span_ns(s, e) for s, e in reps]
    assert spans == [320, 320, 330]
    start, end = reps[median_repetition(spans)]
    assert sorted(zip(start.tolist(), end.tolist(), strict=True)) == [(0, 160), (160, 320)]


def test_device_span_ignores_ops_without_device_times() -> None:
    start = np.array([NO_TIME, 50, 10])
    end = np.array([NO_TIME, 90, 40])
    assert device_span_ns(start, end) == 80
    assert device_span_ns(np.array([NO_TIME]), np.array([NO_TIME])) == 0
