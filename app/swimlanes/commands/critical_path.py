"""``swimlanes critical-path FILE [--device D] [--json]``: the chain of ops that set the
makespan, and every op's slack.

FILE is a pipeline (or an example's name), which is simulated on ``--device`` (else its own
``device`` key, else h200), or a saved run, timeline or trace, whose timeline is analysed as
measured. See swimlanes.analysis.critical_path for what a link and slack are.
"""

from __future__ import annotations

import argparse
import json

from swimlanes.analysis.critical_path import critical_path
from swimlanes.services.critical_path_output import critical_path_json, format_critical_path
from swimlanes.services.simulation import timeline_of_file


def run(args: argparse.Namespace) -> int:
    timeline = timeline_of_file(args.file, args.device)
    cp = critical_path(timeline)
    if args.json:
        print(json.dumps(critical_path_json(timeline, cp), indent=1))
    else:
        print(format_critical_path(timeline, cp))
    return 0
