"""Pods and PVCs built from a workload's template, as kruise builds them.

``pod_from_template`` is kubecontroller.GetPodFromTemplate (the template's labels,
annotations and finalizers, ``generateName: <set>-``, the spec, a controller reference)
followed by what the webhook and the workload add: the ``KruisePodReady`` readiness gate
(webhook/pod/mutating/pod_readiness.go:29-38, every pod a kruise workload owns) and, for
CloneSet pods, the ``InPlaceUpdateReady`` gate (cloneset/core/cloneset_core.go:102).
Nothing else is added: on the embedded cluster kwok's nodes carry no taint, so the
operator's pod templates schedule as they are.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from mochaos.doubles.kruise import keys
from mochaos.doubles.kruise.api import Obj, Resource
from mochaos.doubles.kruise.objects import controller_ref, name_of, namespace_of


def inject_readiness_gate(pod: Obj, ctype: str) -> None:
    """util.InjectReadinessGateToPod: append the gate unless present."""
    gates = pod["spec"].setdefault("readinessGates", [])
    if not any(g.get("conditionType") == ctype for g in gates):
        gates.append({"conditionType": ctype})


def pod_from_template(workload: Obj, res: Resource, name: str) -> Obj:
    """A new pod of ``workload`` named ``name`` (not yet labelled with its revision)."""
    template = copy.deepcopy((workload.get("spec") or {}).get("template") or {})
    tmeta = template.get("metadata") or {}
    metadata: Obj = {
        "name": name,
        "namespace": namespace_of(workload),
        "generateName": f"{name_of(workload)}-",
        "labels": dict(tmeta.get("labels") or {}),
        "annotations": dict(tmeta.get("annotations") or {}),
        "ownerReferences": [controller_ref(workload, res)],
    }
    if tmeta.get("finalizers"):
        metadata["finalizers"] = list(tmeta["finalizers"])
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec") or {},
    }
    inject_readiness_gate(pod, keys.KRUISE_POD_READY)
    return pod


def claims_for(workload: Obj, name_for: Callable[[str], str]) -> dict[str, Obj]:
    """Template name -> the PVC one pod uses, named ``name_for(template name)``."""
    out: dict[str, Obj] = {}
    for tpl in (workload.get("spec") or {}).get("volumeClaimTemplates") or []:
        claim = copy.deepcopy(tpl)
        tname = (claim.get("metadata") or {}).get("name", "")
        claim.pop("status", None)
        claim["apiVersion"] = "v1"
        claim["kind"] = "PersistentVolumeClaim"
        claim["metadata"] = {
            "name": name_for(tname),
            "namespace": namespace_of(workload),
            "labels": dict((claim.get("metadata") or {}).get("labels") or {}),
        }
        out[tname] = claim
    return out


def wire_volumes(pod: Obj, claims: dict[str, Obj]) -> None:
    """UpdateStorage: one PVC volume per claim template (replacing a same-named volume of
    the template), then the template's other volumes."""
    current = pod["spec"].get("volumes") or []
    volumes = [
        {
            "name": tname,
            "persistentVolumeClaim": {"claimName": name_of(claim), "readOnly": False},
        }
        for tname, claim in claims.items()
    ]
    volumes += [v for v in current if v.get("name") not in claims]
    pod["spec"]["volumes"] = volumes
