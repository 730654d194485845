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
    devices = [_untyped(d.model_dump(), links, system.host) for d in system.devices]
    return System.model_validate({**system.model_dump(), "name": f"{system.name} ({old} -> {new})", "links": links,
                                  "devices": devices})


def _untyped(device: dict, links: list[dict], host: str) -> dict:
    """A CXL-typed device whose link to the host is no longer a CXL link is not a CXL device any more: its
    ``cxl_type`` and bias fields go (what if the FPGA were on PCIe?)."""
    from ..links import resolve
    from ..links.coherence import is_cxl

    if device.get("cxl_type") is None:
        return device
    to_host = next((ref["link"] for ref in links if set(ref["between"]) == {device["name"], host}), None)
    if to_host is not None and is_cxl(resolve(to_host)):
        return device
    return {k: v for k, v in device.items() if k not in ("cxl_type", "bias_flip", "bias_page")}


def compare(system: System, workflow: Workflow, old: str, new: str, strategy: Optional[str] = None,
            chunk: Optional[int] = None) -> dict[str, Any]:
    """Makespans before and after the replacement, for the given strategy (or the workflow's)."""
    changed = replace_link(system, old, new)
    before, after = (flows.makespan(s, workflow, strategy, chunk) for s in (system, changed))
    return {"system": system.name, "replaced": old, "by": new, "strategy": strategy or workflow.strategy,
            "before_seconds": before, "after_seconds": after, "speedup": before / after}
