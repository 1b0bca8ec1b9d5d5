"""Gantt chart drawing speed (offscreen): build, full-view repaint, repaint zoomed to 1 %.

Prints one JSON line per size. Targets on a 2-core machine: 1e6 ops build < 1 s, full-view
repaint < 100 ms, zoomed repaint < 16 ms. Each repaint is timed on the wall clock and in the
thread's CPU time (``*_cpu_ms``), which other work on a shared machine disturbs much less.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_render.py [--sizes 10000 100000 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtGui import QImage, QPainter  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from swimlanes.ui.gantt.chart import GanttChart  # noqa: E402
from swimlanes.ui.gantt.synthetic import synthetic_timeline  # noqa: E402

WIDTH, HEIGHT = 1600, 600


def _repaint_ms(chart: GanttChart, image: QImage, repeats: int) -> tuple[float, float, int]:
    """Median wall and CPU time to paint the plot into ``image`` (a forced full paint, as on
    screen), and how many rectangles or strips the bars took."""
    widget = chart.plot_widget
    times, cpu = [], []
    for _ in range(repeats):
        image.fill(0)
        t, c = time.perf_counter(), time.thread_time()
        painter = QPainter(image)
        widget.render(painter)
        painter.end()
        times.append((time.perf_counter() - t) * 1000.0)
        cpu.append((time.thread_time() - c) * 1000.0)
    return statistics.median(times), statistics.median(cpu), chart._bars.last_drawn


def bench(n_ops: int, repeats: int) -> dict:
    tl = synthetic_timeline(n_ops, n_streams=8, labels=n_ops <= 100_000)
    chart = GanttChart()
    chart.resize(WIDTH, HEIGHT)
    chart.show()
    QApplication.processEvents()
    t = time.perf_counter()
    chart.set_timeline(tl)
    build_ms = (time.perf_counter() - t) * 1000.0
    QApplication.processEvents()
    image = QImage(chart.plot_widget.size(), QImage.Format.Format_ARGB32_Premultiplied)
    full_ms, full_cpu, full_rects = _repaint_ms(chart, image, repeats)
    span = tl.makespan_ns
    chart.set_x_range_ns(span // 2, span // 2 + span // 100)
    QApplication.processEvents()
    zoom_ms, zoom_cpu, zoom_rects = _repaint_ms(chart, image, repeats)
    chart.close()
    return {
        "benchmark": "render",
        "ops": len(tl),
        "bars": int(len(chart.rows_model.bar_x0)),
        "build_ms": round(build_ms, 1),
        "full_repaint_ms": round(full_ms, 1),
        "full_repaint_cpu_ms": round(full_cpu, 1),
        "full_rects": full_rects,
        "zoom_1pct_repaint_ms": round(zoom_ms, 1),
        "zoom_1pct_repaint_cpu_ms": round(zoom_cpu, 1),
        "zoom_rects": zoom_rects,
        "widget_px": [WIDTH, HEIGHT],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    for n in args.sizes:
        print(json.dumps(bench(n, args.repeats)), flush=True)
    del app


if __name__ == "__main__":
    main()
