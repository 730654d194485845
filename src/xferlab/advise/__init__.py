"""Advice on data movement: whether to offload, which link and granularity to use."""
