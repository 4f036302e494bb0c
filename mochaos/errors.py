"""Errors that carry a one-line reason, a hint, and an exit status.

Three families, kept apart so a verdict never blames the wrong party:
usage errors (the command line or input is wrong), infrastructure
errors (the runner, cluster or tooling failed), and operator failures
(reported as test failures, never raised from here); their exit statuses are
:mod:`mochaos.exits`'.
"""

from __future__ import annotations

from mochaos import exits


class MochaosError(Exception):
    """Base class: ``str(err)`` is one line saying what is wrong and what to do."""

    exit_code = exits.INFRA

    def __init__(self, what: str, *, hint: str = "") -> None:
        self.what = what
        self.hint = hint
        super().__init__(f"{what}: {hint}" if hint else what)


class UsageError(MochaosError):
    """Bad input from the user (option, target spec, profile, kubeconfig)."""

    exit_code = exits.USAGE


class InfraError(MochaosError):
    """The runner or cluster failed; never an operator verdict."""

    exit_code = exits.INFRA


class BuildError(InfraError):
    """Building the local cluster's binaries failed."""


class Inconclusive(Exception):
    """A scenario could not put its fault where it meant to (a trigger never held, a write
    was refused): it judges nothing."""
