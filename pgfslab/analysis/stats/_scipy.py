"""`scipy.stats`, imported on first use: `from pgfslab.analysis.stats import _scipy as sps` then `sps.t.ppf(...)`.

Importing scipy.stats costs about 3 s of CPU on the lab's small machines, and many notebooks (and every
notebook that stops early for lack of data) never call a function that needs it (PEP 562 module
__getattr__)."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import scipy.stats

    return getattr(scipy.stats, name)
