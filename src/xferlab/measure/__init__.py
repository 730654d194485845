"""Measurements: running the native probe, statistics, suites."""
