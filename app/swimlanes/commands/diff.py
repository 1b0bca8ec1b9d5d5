"""``swimlanes diff A B [--device D] [--device-a D] [--device-b D] [--match M] [--json]``: two
timelines side by side.

Each side is a pipeline (file or example name), simulated, or a saved run, timeline or trace,
as measured: before and after a change, two designs, one design on two devices. Ops are matched
by program index, label or stream order (swimlanes.timeline.diff); deltas are B minus A.
"""

from __future__ import annotations

import argparse
import json

from swimlanes.services.diff_output import format_diff
from swimlanes.services.simulation import timeline_of_file
from swimlanes.timeline.diff import diff_json, diff_timelines


def run(args: argparse.Namespace) -> int:
    a = timeline_of_file(args.a, args.device_a or args.device)
    b = timeline_of_file(args.b, args.device_b or args.device)
    d = diff_timelines(a, b, args.match)
    if args.json:
        print(json.dumps(diff_json(d), indent=1))
    else:
        print(format_diff(d, top=args.top))
    return 0
