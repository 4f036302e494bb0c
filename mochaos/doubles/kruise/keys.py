"""OpenKruise's label, annotation and condition keys and lifecycle states, as kruise-api
v1.4.0 defines them (apps/pub/lifecycle.go, apps/pub/inplace_update.go,
apps/pub/pod_readiness_gate.go, apps/v1alpha1/cloneset_types.go, well_known_labels.go) plus
the Kubernetes keys kruise's controllers write or read.
"""

from __future__ import annotations

# Lifecycle (apps/pub/lifecycle.go).
LIFECYCLE_STATE = "lifecycle.apps.kruise.io/state"
LIFECYCLE_TIMESTAMP = "lifecycle.apps.kruise.io/timestamp"
PREPARING_NORMAL = "PreparingNormal"
NORMAL = "Normal"
PREPARING_UPDATE = "PreparingUpdate"
UPDATING = "Updating"
UPDATED = "Updated"
PREPARING_DELETE = "PreparingDelete"

# Readiness gates kruise owns (apps/pub/inplace_update.go, pod_readiness_gate.go).
IN_PLACE_UPDATE_READY = "InPlaceUpdateReady"
KRUISE_POD_READY = "KruisePodReady"

# Pod labels.
CONTROLLER_REVISION_HASH = "controller-revision-hash"  # apps/v1 ControllerRevisionHashLabelKey
POD_TEMPLATE_HASH = "pod-template-hash"  # apps/v1 DefaultDeploymentUniqueLabelKey
STATEFULSET_POD_NAME = "statefulset.kubernetes.io/pod-name"  # apps/v1 StatefulSetPodNameLabel
CLONESET_INSTANCE_ID = "apps.kruise.io/cloneset-instance-id"
SPECIFIED_DELETE = "apps.kruise.io/specified-delete"

# Pod annotation read by the scale-in order (k8s PodDeletionCost).
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

# CloneSet label switching PreparingDelete pods out of the scale count.
SCALING_EXCLUDE_PREPARING_DELETE = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"

# Defaults (apps/v1alpha1/cloneset_types.go).
DEFAULT_CLONESET_MAX_UNAVAILABLE = "20%"
INSTANCE_ID_LENGTH = 5  # pkg/controller/cloneset/sync/cloneset_scale.go:42
