"""Errors that the command line reports as one clear line instead of a traceback."""

from __future__ import annotations


class LabError(Exception):
    """A user-facing error: bad config, unsafe request, missing tool, failed step."""
