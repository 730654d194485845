"""The flow simulator: a SimPy discrete-event engine for DAGs of tasks and transfers, and a
vectorized max-plus fast path for linear pipelines (seed 000's pipelined application model).

* :mod:`.model`: the inputs (:class:`Resource`, :class:`Op`) and the output (:class:`Timeline`);
  :func:`ops_for_pipeline` builds a linear pipeline's DAG.
* :mod:`.engine`: :func:`simulate` (SimPy; devices queue, links share bandwidth fairly).
* :mod:`.fastpath`: :func:`pipeline`, :func:`pipeline_uniform`, :func:`pipeline_makespan`,
  :func:`balanced_formula`.
"""

from .engine import simulate
from .fastpath import balanced_formula, pipeline, pipeline_makespan, pipeline_uniform
from .model import KINDS, Op, Resource, Span, Timeline, Usage, ops_for_pipeline

__all__ = [
    "KINDS", "Op", "Resource", "Span", "Timeline", "Usage", "ops_for_pipeline", "simulate",
    "balanced_formula", "pipeline", "pipeline_makespan", "pipeline_uniform",
]
