"""What if one link of a system were another? Re-simulate a workflow with the link replaced."""

from __future__ import annotations

from typing import Any, Optional

from ..errors import BadValue
from ..sim import flows
from ..system.models import System, Workflow


def replace_link(system: System, old: str, new: str) -> System:
    """``system`` with every link whose LINK is ``old`` (or that joins the devices ``a-b``) made ``new``."""
    from ..links import resolve

    resolve(new)  # a bad replacement fails here, naming itself
    links, hits = [], 0
    for ref in system.links:
        joins = "-".join(ref.between) == old or "-".join(reversed(ref.between)) == old
        if ref.link == old or joins:
            links.append({"between": list(ref.between), "link": new})
            hits += 1
        else:
            links.append(ref.model_dump())
    if not hits:
        used = sorted({r.link for r in system.links} | {"-".join(r.between) for r in system.links})
        raise BadValue(f"--replace '{old}': no link of system '{system.name}' is '{old}'; its links: {', '.join(used)}")
    return System.model_validate({**system.model_dump(), "name": f"{system.name} ({old} -> {new})", "links": links})


def compare(system: System, workflow: Workflow, old: str, new: str, strategy: Optional[str] = None,
            chunk: Optional[int] = None) -> dict[str, Any]:
    """Makespans before and after the replacement, for the given strategy (or the workflow's)."""
    changed = replace_link(system, old, new)
    before, after = (flows.makespan(s, workflow, strategy, chunk) for s in (system, changed))
    return {"system": system.name, "replaced": old, "by": new, "strategy": strategy or workflow.strategy,
            "before_seconds": before, "after_seconds": after, "speedup": before / after}
