"""Errors that carry a one-line reason, a hint, and an exit status.

Three families, kept apart so a verdict never blames the wrong party:
usage errors (exit 2: the command line or input is wrong), infrastructure
errors (exit 3: the runner, cluster or tooling failed), and operator failures
(exit 1, reported as test failures, never raised from here).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_OPERATOR_FAILED = 1
EXIT_USAGE = 2
EXIT_INFRA = 3


class MochaosError(Exception):
    """Base class: ``str(err)`` is one line saying what is wrong and what to do."""

    exit_code = EXIT_INFRA

    def __init__(self, what: str, *, hint: str = "") -> None:
        self.what = what
        self.hint = hint
        super().__init__(f"{what}: {hint}" if hint else what)


class UsageError(MochaosError):
    """Bad input from the user (option, target spec, profile, kubeconfig)."""

    exit_code = EXIT_USAGE


class InfraError(MochaosError):
    """The runner or cluster failed; never an operator verdict."""

    exit_code = EXIT_INFRA


class BuildError(InfraError):
    """Building the local cluster's binaries failed."""


class Inconclusive(Exception):
    """A scenario could not put its fault where it meant to (trigger missed)."""
