"""Plain-dict REST access to the apiserver for the kruise double, cluster-wide or namespaced.

The kubernetes client builds each URL with the kubeconfig's auth and our user agent, and its
connection pool (TLS) carries the request; bodies go out and come back as raw JSON. HTTP
errors become :class:`ApiError` subclasses so callers branch like ``apierrors.IsConflict``.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
from urllib3.exceptions import HTTPError as Urllib3Error

from mochaos.kube import new_api_client
from mochaos.observe.watching import stream_events

Obj = dict[str, Any]

USER_AGENT = "mochaos/kruise-double"
REQUEST_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource type and how to address it."""

    kind: str
    plural: str
    group: str = ""
    version: str = "v1"
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """The apiVersion of objects of this type."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        """The collection (all namespaces when ``namespace`` is None), an object, or one of
        its subresources."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        path = f"{base}/{self.plural}"
        if name is not None:
            path += f"/{name}"
        return f"{path}/{sub}" if sub else path


KRUISE_GROUP = "apps.kruise.io"
CLONESETS = Resource("CloneSet", "clonesets", KRUISE_GROUP, "v1alpha1")
STATEFULSETS = Resource("StatefulSet", "statefulsets", KRUISE_GROUP, "v1beta1")
PODS = Resource("Pod", "pods")
PVCS = Resource("PersistentVolumeClaim", "persistentvolumeclaims")
PVS = Resource("PersistentVolume", "persistentvolumes", namespaced=False)
EVENTS = Resource("Event", "events")
CRDS = Resource(
    "CustomResourceDefinition",
    "customresourcedefinitions",
    "apiextensions.k8s.io",
    "v1",
    namespaced=False,
)


class ApiError(Exception):
    """A failed call: ``status`` is the HTTP code (0 when there was no answer)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")


class NotFound(ApiError):
    """404."""


class Conflict(ApiError):
    """409 Conflict: a stale resourceVersion (optimistic lock lost)."""


class AlreadyExists(ApiError):
    """409 AlreadyExists: the name is taken."""


class Gone(ApiError):
    """410: the watch's resourceVersion is too old; list again."""


class Unreachable(ApiError):
    """No HTTP answer (connection refused or reset, timeout)."""


def _error(status: int, data: bytes) -> ApiError:
    try:
        body = json.loads(data or b"{}")
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    reason = str(body.get("reason", ""))
    message = str(body.get("message", "")) or data.decode("utf-8", "replace")[:200]
    if status == 409:
        return (AlreadyExists if reason == "AlreadyExists" else Conflict)(status, reason, message)
    cls = {404: NotFound, 410: Gone}.get(status, ApiError)
    return cls(status, reason, message)


class Api:
    """The apiserver of one kubeconfig, spoken to in JSON dicts."""

    def __init__(self, kubeconfig: Path, *, user_agent: str = USER_AGENT) -> None:
        self._client = new_api_client(kubeconfig, user_agent=user_agent)
        self._responses: set[Any] = set()
        self._lock = threading.Lock()

    def close(self) -> None:
        """Interrupt open watches and close the connection pool."""
        with self._lock:
            responses = list(self._responses)
        for resp in responses:
            with contextlib.suppress(Exception):  # already closed: nothing to interrupt
                resp.shutdown()
        self._client.close()

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: Any = REQUEST_TIMEOUT,
    ) -> Any:
        """The raw urllib3 response of one call (not read yet); errors raised as ApiError.

        The client builds the URL and the auth headers; the body is sent as compact JSON
        with sorted keys, the bytes Go's encoder would produce, so an embedded raw field
        (a ControllerRevision's ``data``) survives the apiserver re-encoding it on a patch.
        """
        headers = {"Accept": "application/json", "Content-Type": content_type}
        method, url, headers, _, _ = self._client.param_serialize(
            method,
            path,
            query_params=query or [],
            header_params=headers,
            auth_settings=["BearerToken"],
        )
        data = None if body is None else json.dumps(body, separators=(",", ":"), sort_keys=True)
        if isinstance(timeout, tuple):
            limit = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        else:
            limit = urllib3.Timeout(total=timeout)
        try:
            resp = self._client.rest_client.pool_manager.request(
                method, url, body=data, headers=headers, timeout=limit, preload_content=False
            )
        except (Urllib3Error, OSError) as err:
            raise Unreachable(0, "Unreachable", f"{method} {path}: {err}") from err
        if resp.status >= 400:
            payload = resp.data
            resp.release_conn()
            raise _error(resp.status, payload)
        return resp

    def request(self, method: str, path: str, **kwargs: Any) -> Obj:
        """One call; the decoded JSON answer."""
        resp = self._call(method, path, **kwargs)
        try:
            data = resp.data
        finally:
            resp.release_conn()
        return json.loads(data) if data else {}

    def get(self, res: Resource, namespace: str | None, name: str) -> Obj:
        """GET one object."""
        return self.request("GET", res.path(namespace, name))

    def list(self, res: Resource, namespace: str | None = None) -> Obj:
        """LIST (all namespaces when ``namespace`` is None): the List with its version."""
        return self.request("GET", res.path(namespace))

    def create(self, res: Resource, obj: Obj) -> Obj:
        """POST ``obj`` into its namespace."""
        return self.request("POST", res.path(obj["metadata"].get("namespace")), body=obj)

    def update(self, res: Resource, obj: Obj, *, sub: str = "") -> Obj:
        """PUT the whole object (or a subresource); its resourceVersion makes it optimistic."""
        m = obj["metadata"]
        return self.request("PUT", res.path(m.get("namespace"), m["name"], sub), body=obj)

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch: Obj,
        *,
        strategic: bool = False,
        sub: str = "",
    ) -> Obj:
        """PATCH with a JSON merge patch, or a strategic merge patch for built-in kinds."""
        kind = "strategic-merge-patch" if strategic else "merge-patch"
        return self.request(
            "PATCH",
            res.path(namespace, name, sub),
            body=patch,
            content_type=f"application/{kind}+json",
        )

    def apply(self, res: Resource, obj: Obj, *, manager: str) -> Obj:
        """Server-side apply of ``obj`` (forced)."""
        m = obj["metadata"]
        return self.request(
            "PATCH",
            res.path(m.get("namespace"), m["name"]),
            query=[("fieldManager", manager), ("force", "true")],
            body=obj,
            content_type="application/apply-patch+yaml",
        )

    def delete(self, res: Resource, namespace: str | None, name: str, *, uid: str = "") -> Obj:
        """DELETE one object (with a UID precondition when ``uid`` is given)."""
        body = {"preconditions": {"uid": uid}} if uid else None
        return self.request("DELETE", res.path(namespace, name), body=body)

    def watch(
        self, res: Resource, *, resource_version: str, timeout: int, stop: threading.Event
    ) -> Iterator[Obj]:
        """Watch events (dicts with ``type`` and ``object``) from ``resource_version``, all
        namespaces, until the server ends the stream or ``stop`` is set."""
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout)),
        ]
        resp = self._call("GET", res.path(None), query=query, timeout=(5, timeout + 30))
        with self._lock:
            self._responses.add(resp)
        try:
            yield from stream_events(resp, stop)
        except (Urllib3Error, OSError) as err:
            if not stop.is_set():
                raise Unreachable(0, "Unreachable", f"watch {res.plural}: {err}") from err
        finally:
            with self._lock:
                self._responses.discard(resp)
            resp.release_conn()
