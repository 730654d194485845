"""The machine: its inventory (CPUs, caches, memory nodes), and later System/Workflow schemas."""
