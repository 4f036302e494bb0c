"""A stand-in for the cluster's volume provisioner, which the workloads' PVCs need here.

The LogSet (and a DNSet or CNSet with a cache volume) asks for PVCs through its
``volumeClaimTemplates``; kruise creates them, and on a real cluster a StorageClass's
provisioner binds each to a new volume. The embedded cluster has neither, so the
kube-scheduler would keep those pods Pending ("pod has unbound immediate
PersistentVolumeClaims"). The binder creates, for every Pending PVC without a storage class,
a hostPath PersistentVolume of the requested size pre-bound to it (``claimRef`` with the
PVC's uid); the controller-manager's PV controller then binds the pair and, when the PVC is
deleted, deletes the PV (reclaim policy Delete). kwok runs no containers, so nothing is
ever written to the path.
"""

from __future__ import annotations

from mochaos.doubles.kruise.api import PVS, AlreadyExists, Obj
from mochaos.doubles.kruise.objects import deleting, name_of, namespace_of, uid_of
from mochaos.doubles.kruise.writer import Writer

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "mochaos-kruise-double"
DEFAULT_SIZE = "1Gi"
HOST_ROOT = "/tmp/mochaos-volumes"


def wants_volume(pvc: Obj) -> bool:
    """A live, unbound PVC without a storage class (only those are ours to bind)."""
    spec = pvc.get("spec") or {}
    phase = (pvc.get("status") or {}).get("phase", "Pending")
    return (
        not deleting(pvc)
        and phase == "Pending"
        and not spec.get("volumeName")
        and not spec.get("storageClassName")
    )


def volume_name(pvc: Obj) -> str:
    """The PV bound to a PVC is named after the PVC's uid."""
    return f"mochaos-{uid_of(pvc)}"


def volume_for(pvc: Obj) -> Obj:
    """A hostPath PV pre-bound to ``pvc`` with its size, access modes and volume mode."""
    spec = pvc.get("spec") or {}
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", DEFAULT_SIZE)
    ns, name = namespace_of(pvc), name_of(pvc)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume_name(pvc), "labels": {MANAGED_BY: MANAGER}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": "",
            "hostPath": {"path": f"{HOST_ROOT}/{ns}/{name}", "type": "DirectoryOrCreate"},
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": ns,
                "name": name,
                "uid": uid_of(pvc),
            },
        },
    }


def bind(writer: Writer, pvc: Obj, existing_volume: Obj | None) -> None:
    """Create the PV for ``pvc`` unless it exists (idempotent)."""
    if not wants_volume(pvc) or existing_volume is not None:
        return
    try:
        writer.create(PVS, volume_for(pvc), msg="provision volume", pvc=name_of(pvc))
    except AlreadyExists:
        return
