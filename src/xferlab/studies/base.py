"""What a study is: its name, the seed and the experiment it reproduces, and two functions: ``plan``
turns the options and this machine into steps (each one measurement run of an existing suite:
steps, converter, parameters) and the classes it must skip with their reasons; ``table`` turns the
rows of every step into the seed's comparison table."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..measure.steps import Converter, Step


@dataclass
class StudyStep:
    """One measurement run of a study: ``key`` names it within the study (a re-run skips a key whose
    run is already in the store), ``label`` says what it measures."""

    key: str
    label: str
    suite: str
    steps: list[Step]
    convert: Converter
    params: dict[str, Any] = field(default_factory=dict)
    inventory: Optional[dict[str, Any]] = None


@dataclass
class Plan:
    steps: list[StudyStep]
    skipped: list[dict[str, str]]  # {"class": …, "reason": …}: what this machine lacks
    #: what the plan chose on this machine and why, as lines under the table (the CPUs the launch study pins,
    #: a host thread on a socket remote from the device)
    notes: list[str] = field(default_factory=list)


@dataclass
class Study:
    name: str
    seed: str            # "seed 003"
    experiment: str      # what the seed measured, in a line
    description: str
    plan: Callable[[dict[str, Any]], Plan]
    table: Callable[[dict[str, list[dict[str, Any]]]], list[dict[str, Any]]]  # rows by step key -> the comparison
    columns: list[tuple[str, str]]  # (key, header) of the table
    options: dict[str, Any] = field(default_factory=dict)  # the options it takes, with their defaults
    #: what the table shows that a row cannot (a verdict over rows), as lines under it; None: nothing
    notes: Optional[Callable[[list[dict[str, Any]]], list[str]]] = None
    #: its figures from the table, written into a folder (`study run --plots DIR`); None: it draws none
    plot: Optional[Callable[[list[dict[str, Any]], Path], list[Path]]] = None


def option(key: str) -> str:
    """The command-line option of a study option's key: ``pmem_node`` -> ``--pmem-node``."""
    return "--" + key.replace("_", "-")
