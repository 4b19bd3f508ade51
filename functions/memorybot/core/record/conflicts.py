"""The stores' refusals of a write that rests on what is no longer so. Their own module, named by
``ports`` too, so that the interactions function's cold start can catch one without the ports.
"""

from __future__ import annotations


class ConflictError(Exception):
    """The record was changed by someone else since it was read."""


class PersonRefused(ConflictError):
    """The person's record refuses the write (``PersonCheck``): erased, paused, resumed or forgot
    everything since what the write rests on. Nothing was written; callers that drop a conflicting
    change drop this one too."""


class MoveBlocked(ConflictError):
    """A move's destination holds a memory under the same id: nothing was written."""
