"""Calibrating models from measurements: link profiles (t_s, b) from transfer sweeps."""
