"""Kubernetes API clients for the framework, each with its own user agent.

The user agent names the framework part making the call (``mochaos/recorder``,
``mochaos/agent``, ``mochaos/chaos``…), so the apiserver audit log can tell the
framework's own load apart from the operator's writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client, config

from mochaos.errors import InfraError, UsageError


@dataclass(frozen=True, slots=True)
class Cluster:
    """A reachable Kubernetes cluster, as a provider handed it out."""

    name: str
    provider: str
    kubeconfig: Path
    version: str
    context: str | None = None
    audit_log: Path | None = None
    state_dir: Path | None = None
    """Where the provider keeps this cluster's state (local clusters: its doubles too)."""
    events_log: Path | None = None
    """JSON lines, one per restart of one of the cluster's processes (local clusters: the
    supervisor's, see mochaos.cluster.events); the recorder follows it."""


def new_api_client(
    kubeconfig: Path, *, user_agent: str, context: str | None = None
) -> client.ApiClient:
    """An ApiClient for the kubeconfig (and context), with our user agent, no retries."""
    if not Path(kubeconfig).is_file():
        raise UsageError(
            f"kubeconfig {kubeconfig} not found",
            hint="pass an existing file with --mochaos-kubeconfig or start the local cluster",
        )
    try:
        api = config.new_client_from_config(config_file=str(kubeconfig), context=context)
    except config.ConfigException as err:
        raise UsageError(f"kubeconfig {kubeconfig}: {err}", hint="check --mochaos-context") from err
    api.user_agent = user_agent
    api.configuration.retries = 0
    return api


@contextmanager
def api_client(
    kubeconfig: Path, *, user_agent: str, context: str | None = None
) -> Iterator[client.ApiClient]:
    """Context-managed :func:`new_api_client` (closes its connection pool)."""
    api = new_api_client(kubeconfig, user_agent=user_agent, context=context)
    try:
        yield api
    finally:
        api.close()


def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    """CustomObjectsApi on ``api``."""
    return client.CustomObjectsApi(api)


def check_reachable(api: client.ApiClient, *, timeout: float = 5.0) -> str:
    """Return the server's gitVersion, or raise InfraError with what to do."""
    try:
        return client.VersionApi(api).get_code(_request_timeout=timeout).git_version
    except Exception as err:
        host = api.configuration.host
        raise InfraError(
            f"apiserver {host} unreachable ({type(err).__name__})",
            hint="start the cluster (python -m mochaos cluster up) or check the kubeconfig",
        ) from err


__all__ = ["Cluster", "api_client", "check_reachable", "custom", "new_api_client"]
