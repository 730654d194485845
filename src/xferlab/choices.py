"""The names of choices that the library and the CLI's option table share, in a module that imports nothing: every
`xferlab` command builds its options' help from them at start-up, without loading the link models (pydantic, numpy)
that define what the names mean."""

#: Transfer operations a link model times (:mod:`xferlab.links.base`).
OPS: tuple[str, ...] = ("write", "read", "readwrite")

#: Flow strategies of a system's edges (:mod:`xferlab.system.models`).
STRATEGIES = ("staged", "direct", "coherent", "pipelined")

#: The biases of a CXL Type 2 device's memory (:mod:`xferlab.links.coherence`).
BIASES = ("host", "device")

#: The preset that device fits are set beside by default: seed 000's testbed link (PCIe Gen3 x16).
DEVICE_AGAINST = "pcie3x16"

#: The network model that network fits are set beside by default: seed 001's testbed network (EDR InfiniBand).
NETWORK_AGAINST = "ib-edr"
