"""Design-space sweeps: systems x links x workflows x strategies x chunk sizes, every point evaluated
by the flow simulator (the max-plus fast path for pipelined chains, the SimPy engine otherwise), in
this process or on Dask (a local cluster or an existing scheduler), results streamed into the store.

* :mod:`.spec`: the sweep file (YAML, validated; ``xferlab schema sweep``) and its grid of points;
* :mod:`.evaluate`: one batch of points -> rows (what a Dask worker runs);
* :mod:`.run`: the executor seam (``concurrent.futures``: in-process, a local Dask cluster, a
  scheduler), batching, the store, resume;
* :mod:`.export`: what a sweep writes besides the store (Parquet, the heat map);
* :mod:`.summary`: what the points answer (speedup against the baseline, best configuration per
  question, Pareto front against link cost, chunk-size crossovers, the heat map's grid).
"""

#: The largest grid `xferlab sweep run` starts unless --max-points allows more; the time a grid will
#: take is estimated from a few of its points timed on the machine and printed before any runs.
MAX_POINTS = 100_000
