"""The trainer's own failures, each with the HTTP status train_routes.py answers with (BadRequest, for a
request that names a wrong field, is batch.py's)."""

from __future__ import annotations


class StepConflict(Exception):
    """The request does not fit the run's checkpoints (HTTP 409)."""

    status = 409


class TrainFailure(RuntimeError):
    """The step ran and failed (e.g. a non-finite loss); nothing was saved."""
