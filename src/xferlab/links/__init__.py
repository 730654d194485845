"""Analytic transfer-time models of interconnects (see :mod:`xferlab.links.base`)."""

from .base import OPS, Link, Op
from .cxl import CxlLink
from .network import EthernetLink, InfinibandLink
from .nvlink import NvlinkLink
from .pcie import PcieLink
from .piecewise import PiecewiseLink
from .presets import PRESETS, load_links, resolve
from .simple import SimpleLink

__all__ = [
    "OPS", "Link", "Op", "CxlLink", "EthernetLink", "InfinibandLink", "NvlinkLink", "PcieLink",
    "PiecewiseLink", "SimpleLink", "PRESETS", "load_links", "resolve",
]
