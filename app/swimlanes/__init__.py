"""Swimlanes: design, simulate and measure CUDA stream pipelines."""

__version__ = "0.1.0"
