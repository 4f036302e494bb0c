"""The existing provider: a cluster someone else runs, named by a kubeconfig context.

It never creates or deletes clusters. It refuses any context that is not in
``--mochaos-allow-context`` while reading the kubeconfig file, before any network call,
so a mistyped or defaulted context cannot point chaos at a shared cluster.
It deletes only namespaces it created and labelled itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.errors import UsageError
from mochaos.kube import Cluster, check_reachable, new_api_client
from mochaos.tooling.progress_callback import Progress, say


def _default_kubeconfig() -> Path:
    first = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return Path(first).expanduser() if first else Path.home() / ".kube" / "config"


def _new_client(kubeconfig: Path, context: str) -> Any:
    return new_api_client(kubeconfig, user_agent="mochaos/existing", context=context)


class ExistingProvider:
    """Hands out an allow-listed context of an existing cluster (see module docstring)."""

    name = "existing"

    def __init__(
        self,
        *,
        kubeconfig: Path | None,
        context: str | None,
        allow_contexts: Sequence[str],
        client_factory: Callable[[Path, str], Any] = _new_client,
        progress: Progress = say,
    ) -> None:
        self.kubeconfig = (kubeconfig or _default_kubeconfig()).expanduser()
        self.context = self._allowed_context(context, allow_contexts)
        self._client_factory = client_factory
        self.progress = progress
        self._created: list[str] = []

    def _allowed_context(self, context: str | None, allow: Sequence[str]) -> str:
        """The context to use, read from the file only; UsageError unless allow-listed."""
        try:
            config = yaml.safe_load(self.kubeconfig.read_text()) or {}
        except OSError as err:
            raise UsageError(
                f"cannot read kubeconfig {self.kubeconfig}: {err.strerror}",
                hint="pass --mochaos-kubeconfig=<file> or set KUBECONFIG",
            ) from err
        except yaml.YAMLError as err:
            raise UsageError(
                f"kubeconfig {self.kubeconfig} is not valid YAML",
                hint="check the file with `kubectl config view`",
            ) from err
        chosen = context or config.get("current-context")
        if not chosen:
            raise UsageError(
                f"kubeconfig {self.kubeconfig} names no current context",
                hint="pass --mochaos-context=<name>",
            )
        if chosen not in allow:
            listed = ", ".join(allow) if allow else "none"
            raise UsageError(
                f"context {chosen!r} is not allow-listed (allowed: {listed})",
                hint=f"pass --mochaos-allow-context={chosen} if chaos may run on that cluster",
            )
        names = [c.get("name") for c in config.get("contexts") or []]
        if chosen not in names:
            raise UsageError(
                f"context {chosen!r} is not in kubeconfig {self.kubeconfig}",
                hint="`kubectl config get-contexts` lists the contexts",
            )
        return chosen

    # -- ClusterProvider -----------------------------------------------------

    def up(self) -> Cluster:
        """Check the cluster answers (InfraError when not); never creates anything."""
        api = self._client_factory(self.kubeconfig, self.context)
        try:
            version = check_reachable(api, timeout=10)
        finally:
            api.close()
        return Cluster(
            name=self.context,
            provider=self.name,
            kubeconfig=self.kubeconfig,
            version=str(version),
            context=self.context,
        )

    def down(self) -> None:
        """Delete the namespaces this provider created; the cluster itself stays."""
        for namespace in list(self._created):
            self.delete_namespace(namespace)

    def load_image(self, ref: str) -> None:
        """Nothing to load: the cluster's nodes must be able to pull ``ref`` themselves."""
        self.progress(f"existing cluster {self.context}: its nodes must be able to pull {ref}")

    def audit_log(self) -> Path | None:
        """An existing cluster's audit log is not ours to read."""
        return None

    # -- namespaces ------------------------------------------------------------

    def create_namespace(self, name: str, *, run_id: str) -> str:
        """Create a namespace labelled with the run id, and remember it as ours."""
        from kubernetes import client

        api = self._client_factory(self.kubeconfig, self.context)
        try:
            client.CoreV1Api(api).create_namespace(
                {"metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id}}},
                _request_timeout=10,
            )
        finally:
            api.close()
        self._created.append(name)
        return name

    def delete_namespace(self, name: str) -> None:
        """Delete a namespace this provider created; UsageError for any other."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        if name not in self._created:
            raise UsageError(
                f"namespace {name!r} was not created by this run",
                hint="mo-chaos deletes only the namespaces it created on an existing cluster",
            )
        api = self._client_factory(self.kubeconfig, self.context)
        try:
            client.CoreV1Api(api).delete_namespace(name, _request_timeout=10)
        except ApiException as err:
            if err.status != 404:
                raise
        finally:
            api.close()
        self._created.remove(name)
