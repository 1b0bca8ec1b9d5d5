"""Timeline files: reading and writing saved runs, Chrome/Kineto traces and CSV tables.

``io`` opens any timeline-like file and saves runs; ``run_format`` is the saved-run document;
``trace_import`` (with ``trace_json`` and ``trace_events``) reads traces; ``chrome_trace`` and
``csv_export`` write them. What they all share (errors, limits, chunked reading) is in
``trace_source``, which imports none of the others, so the readers form no import cycle.
Imported on demand: ``import swimlanes.timeline`` stays quick.
"""
