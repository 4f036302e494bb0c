"""The CRDs a target brings, and who owns them on a cluster.

Three sets exist: ``own`` — mo-chaos's minimal schemas for CNClaim, CNClaimSet and
CNPool (``schemas/``, written from the operator's API types; enough for the
reference model) —, ``operator`` — the operator's own CRDs read from the
checkout or directory the user points at (``deploy/crds/``) — and ``kruise`` — all of
OpenKruise's, read from its Go module when kruise-manager is built
(:mod:`mochaos.kruise.manager`). Nothing of the operator or of OpenKruise is shipped.

Ownership: every CRD mo-chaos installs is labelled with the set it came from
(:data:`OWNER_LABEL`) and its source. mo-chaos replaces only CRDs it installed itself
(the operator's replace its own minimal ones and the reverse, so a kept cluster serves
whichever target runs: one target kind per cluster at a time; kruise's replace the copies
an older mo-chaos installed from the operator's chart or for its kruise double, and no
other set names them); a CRD someone else
installed (a Helm chart, a user) is never touched — installing over it is refused with
one line. Installs are serialised per cluster with a file lock.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock
from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.errors import InfraError, UsageError
from mochaos.kube import Cluster, api_client
from mochaos.paths import state_dir
from mochaos.progress import announce
from mochaos.tooling.waiting import wait_for

OWNER_LABEL = "mochaos.io/crds"
"""``own`` or ``operator``: which set a CRD mo-chaos installed belongs to."""
SOURCE_ANNOTATION = "mochaos.io/crd-source"
FIELD_MANAGER = "mochaos"
OWN_DIR = Path(__file__).with_name("schemas")
KRUISE_OWNER = "kruise"
"""The owner of OpenKruise's CRDs on the local cluster (installed with kruise-manager)."""
ESTABLISHED_TIMEOUT = 30.0
HELM_MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")
HELM_RELEASE = "meta.helm.sh/release-name"
HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"


@dataclass(frozen=True)
class CrdSet:
    """CRD documents and where they came from."""

    owner: str
    """``own`` or ``operator``."""
    source: str
    docs: tuple[dict[str, Any], ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The CRDs' names (``<plural>.<group>``)."""
        return tuple(d["metadata"]["name"] for d in self.docs)


def own_crds() -> CrdSet:
    """mo-chaos's minimal schemas for the three claim kinds."""
    docs = tuple(yaml.safe_load(p.read_text()) for p in sorted(OWN_DIR.glob("*.yaml")))
    return CrdSet("own", "mo-chaos minimal schemas", docs)


def operator_crds(root: Path, *, source: str) -> CrdSet:
    """The operator's CRDs from a checkout (``deploy/crds``) or from a directory of CRD
    files; UsageError naming what is missing. OpenKruise's come with kruise-manager (the
    copies in the operator's kruise chart are left out: kruise's own module is the source)."""
    crd_dir = root / "deploy" / "crds" if (root / "deploy" / "crds").is_dir() else root
    files = sorted(crd_dir.glob("*.yaml"))
    docs = [d for f in files for d in yaml.safe_load_all(f.read_text()) if _is_crd(d)]
    docs = [d for d in docs if not d["spec"]["group"].endswith(".kruise.io")]
    kinds = {d["spec"]["names"]["kind"] for d in docs}
    missing = {"CNClaim", "CNClaimSet", "CNPool", "LogSet", "DNSet", "CNSet"} - kinds
    if missing:
        raise UsageError(
            f"{crd_dir} lacks the CRDs of {', '.join(sorted(missing))}",
            hint="point at a matrixone-operator checkout or its deploy/crds directory",
        )
    return CrdSet("operator", source, tuple(docs))


def _is_crd(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"


def install(cluster: Cluster, crds: CrdSet) -> None:
    """Install ``crds`` on the cluster under the ownership rules of the module docstring."""
    lock = state_dir() / "locks" / f"crds-{_cluster_key(cluster)}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with (
        FileLock(str(lock), timeout=300),
        api_client(
            cluster.kubeconfig, user_agent="mochaos/install", context=cluster.context
        ) as api,
    ):
        ext = client.ApiextensionsV1Api(api)
        todo = []
        for doc in crds.docs:
            name = doc["metadata"]["name"]
            current = _read(ext, name)
            decision = decide(current, crds)
            if decision == "keep":
                continue
            todo.append(doc)
        if todo:
            announce(f"installing {len(todo)} CRDs ({crds.source}) on {cluster.name}")
        for doc in todo:
            _apply(ext, _labelled(doc, crds))
        wait_established(ext, [doc["metadata"]["name"] for doc in todo])


def crd_owner(crd: dict[str, Any]) -> str:
    """Who installed a CRD: ``mochaos:own`` / ``mochaos:operator`` (our label),
    ``helm:<release>/<namespace>`` (Helm's ownership metadata), ``manager:<field manager>``
    or ``unknown``."""
    meta = crd.get("metadata") or {}
    labels = meta.get("labels") or {}
    ann = meta.get("annotations") or {}
    if labels.get(OWNER_LABEL):
        return f"mochaos:{labels[OWNER_LABEL]}"
    if labels.get(HELM_MANAGED_BY[0]) == HELM_MANAGED_BY[1] or HELM_RELEASE in ann:
        return f"helm:{ann.get(HELM_RELEASE, '?')}/{ann.get(HELM_RELEASE_NAMESPACE, '?')}"
    managers = [f.get("manager", "") for f in meta.get("managedFields") or []]
    return f"manager:{managers[0]}" if managers and managers[0] else "unknown"


def decide(current: dict[str, Any] | None, crds: CrdSet) -> str:
    """``install``, ``replace`` or ``keep`` for one CRD; UsageError when it is not ours."""
    if current is None:
        return "install"
    meta = current.get("metadata") or {}
    owner = (meta.get("labels") or {}).get(OWNER_LABEL)
    name = meta.get("name", "?")
    if owner is None and crd_owner(current).startswith("manager:mochaos"):
        return "replace"  # applied by mo-chaos's tooling without the label (tests, older runs)
    if owner is None:
        raise UsageError(
            f"CRD {name} was installed by {crd_owner(current)}, not by mo-chaos; it will not "
            "replace it",
            hint="use a cluster without it (e.g. --mochaos-cluster=local), or a target that "
            "uses it as it is (image:/installed)",
        )
    source = (meta.get("annotations") or {}).get(SOURCE_ANNOTATION, "")
    # Ours: the same set from the same source stays; anything else of ours is replaced, so a
    # cluster serves the target of the run at hand (one target kind per cluster at a time).
    return "keep" if owner == crds.owner and source == crds.source else "replace"


def check_chart_can_own_crds(api: Any) -> None:
    """UsageError when mo-chaos installed any of the operator's CRDs on this cluster: the
    operator's chart ships them as templates, and Helm does not adopt objects it did not
    create ("invalid ownership metadata")."""
    ext = client.ApiextensionsV1Api(api)
    ours = []
    for doc in own_crds().docs:
        current = _read(ext, doc["metadata"]["name"])
        if current is not None and crd_owner(current).startswith("mochaos:"):
            ours.append(doc["metadata"]["name"])
    if ours:
        raise UsageError(
            f"CRD {ours[0]} was installed by mo-chaos (a model:/source:/binary: run); the "
            "operator's chart must install its own",
            hint=f"delete them first (`kubectl delete crd {' '.join(ours)}`, which deletes "
            "their objects) or use a fresh cluster",
        )


def _labelled(doc: dict[str, Any], crds: CrdSet) -> dict[str, Any]:
    meta = dict(doc.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), OWNER_LABEL: crds.owner}
    meta["annotations"] = {**(meta.get("annotations") or {}), SOURCE_ANNOTATION: crds.source}
    return {**doc, "metadata": meta}


def _read(ext: client.ApiextensionsV1Api, name: str) -> dict[str, Any] | None:
    try:
        obj = ext.read_custom_resource_definition(name, _request_timeout=10)
    except ApiException as err:
        if err.status == 404:
            return None
        raise
    return ext.api_client.sanitize_for_serialization(obj)


def _apply(ext: client.ApiextensionsV1Api, doc: dict[str, Any]) -> None:
    try:
        ext.patch_custom_resource_definition(
            name=doc["metadata"]["name"], body=doc, field_manager=FIELD_MANAGER, force=True,
            _content_type="application/apply-patch+yaml", _request_timeout=30,
        )  # fmt: skip
    except ApiException as err:
        raise InfraError(
            f"could not install CRD {doc['metadata']['name']}: {err.status} {err.reason}",
            hint="check the cluster is reachable and you may create CRDs",
        ) from err


def wait_established(
    ext: client.ApiextensionsV1Api, names: list[str], *, timeout: float = ESTABLISHED_TIMEOUT
) -> None:
    """Wait until every CRD of ``names`` is Established (served), ``timeout`` for all;
    InfraError naming the first that is not."""
    deadline = time.monotonic() + timeout
    for name in names:

        def established(name: str = name) -> tuple[bool, str]:
            crd = ext.read_custom_resource_definition(name, _request_timeout=10)
            conditions = (crd.status and crd.status.conditions) or []
            held = {c.type: c.status for c in conditions}
            return held.get("Established") == "True", f"conditions {held or 'none yet'}"

        wait_for(
            established, what=f"CRD {name}", timeout=max(deadline - time.monotonic(), 0.0),
            interval=0.1, hint="check the apiserver",
        )  # fmt: skip


def _cluster_key(cluster: Cluster) -> str:
    raw = f"{cluster.provider}/{cluster.name}/{cluster.kubeconfig}/{cluster.context}"
    return hashlib.sha256(raw.encode()).hexdigest()[:12]
