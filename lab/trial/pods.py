"""The pods of rendered StatefulSets and CloneSets, as a kubelet would start them, in plain data.

For each pod: its name (``<sts>-<i>``, ``<cloneset>-<i>``), its main container's command,
arguments and environment (``fieldRef`` and ``secretKeyRef`` resolved as the kubelet does:
name, namespace, pod IP, template annotations, Secret keys), its ConfigMap volumes as files,
its claim and emptyDir volumes as scratch folders, its memory limit, and the DNS names the
cluster would give it: ``<pod>.<subdomain>.<ns>.svc`` and ``<service>.<ns>.svc`` of every
Service whose selector matches its labels. No Docker here: :mod:`.docker_pods` runs them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mochaos.ctrl.objects import COMPONENT_LABEL
from mochaos.errors import InfraError

_QUANTITY = re.compile(r"(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?")
_UNITS = {
    None: 1,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
}
_ANNOTATION = re.compile(r"metadata\.annotations\['([^']+)'\]")


def quantity_bytes(text: str) -> int:
    """A Kubernetes memory quantity (``1536Mi``, ``1Gi``, ``512M``) in bytes."""
    m = _QUANTITY.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"not a memory quantity: {text!r}")
    return int(m[1]) * _UNITS[m[2]]


@dataclass(frozen=True, slots=True)
class Mount:
    """A volume mounted in the main container: ConfigMap files, or a scratch folder."""

    path: str
    volume: str
    files: Mapping[str, str] | None = None
    """The files of a ConfigMap volume (None: a claim or emptyDir, empty at start)."""
    readonly: bool = False


@dataclass(frozen=True, slots=True)
class PodRun:
    """One pod to start."""

    name: str
    workload: str
    kind: str
    """The workload's kind: StatefulSet (log, TN) or CloneSet (CN)."""
    ip: str
    image: str
    command: tuple[str, ...]
    env: Mapping[str, str]
    mounts: tuple[Mount, ...]
    names: tuple[str, ...]
    labels: Mapping[str, str] = field(default_factory=dict)
    memory_limit: int | None = None


def _by_kind(objects: Sequence[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [o for o in objects if o.get("kind") == kind]


def _matches(selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _env(
    container: Mapping[str, Any],
    *,
    pod: str,
    namespace: str,
    ip: str,
    annotations: Mapping[str, str],
    secrets: Mapping[str, Mapping[str, str]],
) -> dict[str, str]:
    out: dict[str, str] = {}
    for var in container.get("env") or []:
        name = var["name"]
        if "value" in var:
            out[name] = str(var["value"])
            continue
        source = var.get("valueFrom") or {}
        if "fieldRef" in source:
            path = source["fieldRef"]["fieldPath"]
            fields = {"metadata.name": pod, "metadata.namespace": namespace, "status.podIP": ip}
            if path in fields:
                out[name] = fields[path]
            elif m := _ANNOTATION.fullmatch(path):
                out[name] = annotations.get(m[1], "")
            else:
                raise InfraError(
                    f"pod {pod}: env {name} uses fieldRef {path}, not supported",
                    hint="extend lab/trial/pods.py",
                )
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            try:
                out[name] = secrets[ref["name"]][ref["key"]]
            except KeyError as err:
                raise InfraError(
                    f"pod {pod}: env {name} names Secret {ref['name']} key "
                    f"{ref['key']}, which the trial was not given",
                    hint="pass the namespace's Secrets",
                ) from err
        else:
            raise InfraError(
                f"pod {pod}: env {name} has no value the trial can resolve",
                hint="extend lab/trial/pods.py",
            )
    return out


def _mounts(
    container: Mapping[str, Any],
    volumes: Mapping[str, Mapping[str, Any]],
    claims: set[str],
    configmaps: Mapping[str, Mapping[str, str]],
    pod: str,
) -> tuple[Mount, ...]:
    out = []
    for mount in container.get("volumeMounts") or []:
        name, path = mount["name"], mount["mountPath"]
        readonly = bool(mount.get("readOnly"))
        volume = volumes.get(name, {})
        if "configMap" in volume:
            cm = volume["configMap"]["name"]
            if cm not in configmaps:
                raise InfraError(
                    f"pod {pod}: ConfigMap {cm} was not rendered",
                    hint="the operator's renderer output is incomplete",
                )
            out.append(Mount(path, name, dict(configmaps[cm]), readonly))
        elif name in claims or "emptyDir" in volume:
            out.append(Mount(path, name, None, readonly))
        else:
            raise InfraError(
                f"pod {pod}: volume {name} is neither a ConfigMap, a claim nor an emptyDir",
                hint="extend lab/trial/pods.py",
            )
    return tuple(out)


def plan_pods(
    objects: Sequence[Mapping[str, Any]],
    *,
    namespace: str,
    ips: Iterator[str],
    secrets: Mapping[str, Mapping[str, str]],
) -> list[PodRun]:
    """Every pod of the rendered workloads, StatefulSets first (LogSet before DNSet, as
    the operator orders its sets), each with the next address of ``ips``."""
    configmaps = {
        o["metadata"]["name"]: o.get("data") or {} for o in _by_kind(objects, "ConfigMap")
    }
    services = _by_kind(objects, "Service")
    order = {"LogSet": 0, "DNSet": 1}
    workloads = sorted(
        _by_kind(objects, "StatefulSet") + _by_kind(objects, "CloneSet"),
        key=lambda w: (
            w["kind"] != "StatefulSet",
            order.get(w["spec"]["template"]["metadata"]["labels"].get(COMPONENT_LABEL, ""), 2),
        ),
    )
    pods = []
    for workload in workloads:
        spec = workload["spec"]
        template = spec["template"]
        pod_spec = template["spec"]
        labels = dict(template["metadata"].get("labels") or {})
        annotations = dict(template["metadata"].get("annotations") or {})
        subdomain = spec.get("serviceName") or pod_spec.get("subdomain")
        claims = {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates") or []}
        volumes = {v["name"]: v for v in pod_spec.get("volumes") or []}
        (main,) = [c for c in pod_spec["containers"] if c["name"] == "main"]
        limit = ((main.get("resources") or {}).get("limits") or {}).get("memory")
        for i in range(int(spec.get("replicas") or 0)):
            name = f"{workload['metadata']['name']}-{i}"
            ip = next(ips)
            names = [f"{name}.{subdomain}.{namespace}.svc"] if subdomain else []
            names += [
                f"{s['metadata']['name']}.{namespace}.svc"
                for s in services
                if _matches(s["spec"].get("selector"), labels)
            ]
            pods.append(
                PodRun(
                    name=name,
                    workload=workload["metadata"]["name"],
                    kind=workload["kind"],
                    ip=ip,
                    image=main["image"],
                    command=(*main.get("command", ()), *(main.get("args") or ())),
                    env=_env(
                        main,
                        pod=name,
                        namespace=namespace,
                        ip=ip,
                        annotations=annotations,
                        secrets=secrets,
                    ),
                    mounts=_mounts(main, volumes, claims, configmaps, name),
                    names=tuple(names),
                    labels=labels,
                    memory_limit=quantity_bytes(limit) if limit else None,
                )
            )
    return pods
