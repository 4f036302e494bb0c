"""The JSON REST client for the apiserver, shaped like controller-runtime's client.

Objects are plain dicts as the apiserver sends them. A 409 becomes :class:`Conflict`, a 404
:class:`NotFound`, a 410 :class:`Gone`, no answer :class:`Unreachable`, so callers branch
like ``apierrors.IsX``. The reference model talks to the apiserver through it, and so does
the recorder's list+watch (:mod:`mochaos.ctrl.listwatch`).
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from urllib3 import Timeout

from mochaos.ctrl.objects import GROUP, VERSION

Obj = dict[str, Any]

POOL_SIZE = 32
"""Connections kept per host: a process watches several kinds at once and writes beside."""
CONNECT_TIMEOUT = 5.0
"""Seconds to open a watch's connection (its read may then last the watch's whole span)."""


@dataclass(frozen=True, slots=True)
class Kind:
    """One namespaced resource type and how to address it."""

    kind: str
    plural: str
    group: str = ""
    version: str = "v1"

    @property
    def api_version(self) -> str:
        """The apiVersion field of objects of this kind."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str, name: str | None = None, sub: str | None = None) -> str:
        """The REST path of the collection, an object, or an object's subresource."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        path = f"{base}/namespaces/{quote(namespace)}/{self.plural}"
        if name is not None:
            path += f"/{quote(name)}"
        if sub is not None:
            path += f"/{sub}"
        return path


PODS = Kind("Pod", "pods")
EVENTS = Kind("Event", "events")
CLAIMS = Kind("CNClaim", "cnclaims", GROUP, VERSION)
CLAIMSETS = Kind("CNClaimSet", "cnclaimsets", GROUP, VERSION)
POOLS = Kind("CNPool", "cnpools", GROUP, VERSION)
KINDS = {k.kind: k for k in (PODS, EVENTS, CLAIMS, CLAIMSETS, POOLS)}
"""The kinds mo-chaos addresses, by ``kind`` name."""


class ApiError(Exception):
    """A failed API call: ``status`` is the HTTP code, ``reason`` the Status reason."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(message or f"{status} {reason}")


class Conflict(ApiError):
    """409: the object was modified (stale resourceVersion) or already exists."""


class NotFound(ApiError):
    """404: the object does not exist."""


class Gone(ApiError):
    """410: the watch's resourceVersion is too old; list again."""


class Unreachable(ApiError):
    """No HTTP answer at all (connection refused or reset, timeout)."""


def status_error(status: int, data: Any) -> ApiError:
    """The error a Status object stands for (an error answer's body, a watch's ERROR
    event): :class:`NotFound`, :class:`Conflict`, :class:`Gone` or :class:`ApiError`."""
    data = data if isinstance(data, dict) else {}
    cls = {404: NotFound, 409: Conflict, 410: Gone}.get(status, ApiError)
    return cls(status, data.get("reason", ""), data.get("message", ""))


def _error(status: int, body: bytes) -> ApiError:
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        data = None
    data = data if isinstance(data, dict) else {}
    message = data.get("message") or body.decode("utf-8", "replace")[:200]
    return status_error(status, {**data, "message": message})


class Kube:
    """Talks to one apiserver with the credentials of a kubernetes-client configuration
    (:meth:`from_kubeconfig` reads one from a kubeconfig file)."""

    def __init__(
        self, cfg: k8s_client.Configuration, *, user_agent: str, timeout: float = 30.0
    ) -> None:
        """``cfg`` is copied, not changed."""
        cfg = copy.copy(cfg)
        cfg.connection_pool_maxsize = POOL_SIZE
        self._pool = k8s_client.rest.RESTClientObject(cfg).pool_manager
        self._host = cfg.host.rstrip("/")
        self._headers = {"User-Agent": user_agent, "Accept": "application/json"}
        bearer = cfg.auth_settings().get("BearerToken")
        if bearer:
            self._headers["Authorization"] = bearer["value"]
        self.timeout = timeout

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str, *, user_agent: str, context: str | None = None
    ) -> Kube:
        """A client with the credentials of a kubeconfig file (and context)."""
        cfg = k8s_client.Configuration()
        k8s_config.load_kube_config(
            config_file=kubeconfig, context=context, client_configuration=cfg,
            persist_config=False,
        )  # fmt: skip
        return cls(cfg, user_agent=user_agent)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Obj:
        """One API call (``timeout``: seconds, the client's own when None); returns the
        decoded JSON body or raises :class:`ApiError`."""
        url = self._host + path + (f"?{urlencode(query)}" if query else "")
        headers = dict(self._headers)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            resp = self._pool.request(
                method, url, body=data, headers=headers, timeout=timeout or self.timeout
            )
        except Exception as err:  # urllib3's transport errors, whatever their class
            raise Unreachable(0, "Unreachable", f"{method} {path}: {err}") from err
        if resp.status >= 400:
            raise _error(resp.status, resp.data)
        return json.loads(resp.data) if resp.data else {}

    def get(self, kind: Kind, namespace: str, name: str) -> Obj:
        """GET one object."""
        return self.request("GET", kind.path(namespace, name))

    def list(
        self, kind: Kind, namespace: str, *, label_selector: str = "", timeout: float | None = None
    ) -> Obj:
        """LIST a collection (the whole List object, with metadata.resourceVersion);
        ``timeout`` as for :meth:`request`."""
        query = {"labelSelector": label_selector} if label_selector else None
        return self.request("GET", kind.path(namespace), query=query, timeout=timeout)

    def create(self, kind: Kind, namespace: str, obj: Obj) -> Obj:
        """POST a new object."""
        return self.request("POST", kind.path(namespace), body=obj)

    def update(self, kind: Kind, obj: Obj, *, status: bool = False) -> Obj:
        """PUT the whole object; its metadata.resourceVersion makes it optimistic."""
        meta = obj["metadata"]
        sub = "status" if status else None
        return self.request("PUT", kind.path(meta["namespace"], meta["name"], sub), body=obj)

    def merge_patch(
        self, kind: Kind, namespace: str, name: str, patch: Obj, *, status: bool = False
    ) -> Obj:
        """PATCH with an RFC 7386 JSON merge patch."""
        sub = "status" if status else None
        return self.request(
            "PATCH",
            kind.path(namespace, name, sub),
            body=patch,
            content_type="application/merge-patch+json",
        )

    def apply(self, path: str, obj: Obj, *, manager: str) -> Obj:
        """Server-side apply of one object at ``path`` (forced)."""
        return self.request(
            "PATCH",
            path,
            query={"fieldManager": manager, "force": "true"},
            body=obj,
            content_type="application/apply-patch+yaml",
        )

    def delete(self, kind: Kind, namespace: str, name: str) -> Obj:
        """DELETE an object (default propagation)."""
        return self.request("DELETE", kind.path(namespace, name))

    def watch(
        self, kind: Kind, namespace: str, *, resource_version: str, timeout_seconds: int
    ) -> WatchStream:
        """Open a watch from ``resource_version`` that the server ends after
        ``timeout_seconds``; iterate the returned stream for its events."""
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        url = self._host + kind.path(namespace) + "?" + urlencode(query)
        timeout = Timeout(connect=CONNECT_TIMEOUT, read=float(timeout_seconds + 30))
        try:
            resp = self._pool.request(
                "GET", url, headers=self._headers, preload_content=False, timeout=timeout
            )
        except Exception as err:  # urllib3's transport errors, whatever their class
            raise Unreachable(0, "Unreachable", f"watch {kind.plural}: {err}") from err
        if resp.status >= 400:
            try:
                raise _error(resp.status, resp.read())
            finally:
                resp.release_conn()
        return WatchStream(resp, kind)


class WatchStream:
    """One open watch response: iterating it yields ``(type, object)`` per event, BOOKMARK
    included so that the caller can move its version, until the server ends the watch.

    An ERROR event raises (:class:`Gone` for 410), a broken connection raises
    :class:`Unreachable`; :meth:`close` from another thread ends a blocked read.
    """

    def __init__(self, resp: Any, kind: Kind) -> None:
        self._resp = resp
        self._kind = kind

    def __iter__(self) -> Iterator[tuple[str, Obj]]:
        try:
            for line in self._lines():
                try:
                    event = json.loads(line)
                except ValueError as err:  # a line cut short: the connection broke
                    raise self._broken(err) from err
                etype, obj = event.get("type", ""), event.get("object") or {}
                if etype == "ERROR":
                    raise status_error(obj.get("code", 500), obj)
                yield etype, obj
        finally:
            self._resp.release_conn()

    def _lines(self) -> Iterator[bytes]:
        buf = b""
        try:
            for chunk in self._resp.stream(4096, decode_content=True):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        yield line
        except Exception as err:  # urllib3's transport errors, whatever their class
            raise self._broken(err) from err
        if buf.strip():
            yield buf

    def _broken(self, err: Exception) -> Unreachable:
        return Unreachable(0, "Unreachable", f"watch {self._kind.plural}: {err}")

    def close(self) -> None:
        """End the stream, also a read blocked in another thread."""
        with contextlib.suppress(Exception):  # already closed
            self._resp.shutdown()
