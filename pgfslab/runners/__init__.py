"""One runner per workload tool. A runner builds the tool's command line from a workload spec,
runs it in the run directory (raw outputs land there untouched) and reports progress, and says in a few words
what its workload is and how it was driven (`describe`, `how`: the paper's words for it)."""

from __future__ import annotations

import importlib
from types import ModuleType

from pgfslab.tools import tool


def runner(name: str) -> ModuleType:
    """The runner module of a registered tool (imported when first asked for: a run imports only its own)."""
    return importlib.import_module(f"pgfslab.runners.{tool(name).name}")
