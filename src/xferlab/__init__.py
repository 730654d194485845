"""xferlab: measure, model and simulate data movement in heterogeneous computers."""

__version__ = "0.1.0"
