"""Qt-free services that the command line, the app and the docs scripts share.

Choosing the preset for a pipeline or a measurement, simulating a file, loading runs and
traces, measuring on the GPU, and the text and JSON forms of a simulation and its prediction
band. The commands (``swimlanes.commands``) are thin front ends over these; nothing here parses
arguments or imports Qt. User-facing failures are
:class:`~swimlanes.services.errors.CommandError`.
"""
