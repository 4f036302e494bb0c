"""The operator versions the model can play, each a set of small, named switches.

Every switch of :class:`Profile` is one behavioural difference between versions, named after
what it changes, with the source line it models (docs/operator-behaviour.md §9, §10.1).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Profile:
    """One operator version as a set of behaviour switches (PR #592 = caee443).

    - ``claim_index``: selectCN and Finalize build the podName → claim index of the other
      live claims and skip pods it names (#587, eb9b356 cnclaim/controller.go:162-173,
      353-364).
    - ``finalize_releases_label``: Finalize removes ``claimed-by`` from a pod another claim
      references and then reports done (#592 Fix 1, caee443 controller.go:367-384).
    - ``relabel_for_holder``: instead of removing ``claimed-by``, hand the pod to the claim
      that references it (``claimed-by=<holder>``); mo-chaos's green reference, not upstream.
    - ``finalize_own_spec_pod``: Finalize also reclaims the pod its own ``spec.podName`` names
      when that pod is Bound and no other live claim's label holds it; closes the race where
      a handed-over pod's holder is finalized before its cache sees the new label (found by
      mo-chaos's epilogue); not upstream.
    - ``scalein_skips_migrating``: CNClaimSet scale-in leaves claims with ``spec.sourcePod``
      out of the candidates (#592 Fix 2, caee443 cnclaimset/controller.go:218-256).
    - ``lost_clears_podname``: Sync clears ``spec.podName``/``nodeName`` when the bound pod
      is NotFound (#592 Fix 3, caee443 cnclaim/controller.go:269-275).
    - ``lost_ends_migration``: that clearing also drops ``spec.sourcePod``: a migration whose
      target pod is gone is over (the claim binds again; the agent may ask anew). Without it
      the claim binds its own source, still labelled for it, and drains and relabels that
      pod for ever (docs/bugs.md#pr592-target-lost, found by
      test_delete_target_pod_during_migration); not upstream.
    - ``pod_map_by_podname``: the pod → claim watch mapping also enqueues claims whose
      ``spec.podName`` names the pod (#592 Fix 4, caee443 controller.go:474-510).
    """

    name: str
    claim_index: bool
    finalize_releases_label: bool = False
    relabel_for_holder: bool = False
    finalize_own_spec_pod: bool = False
    scalein_skips_migrating: bool = False
    lost_clears_podname: bool = False
    lost_ends_migration: bool = False
    pod_map_by_podname: bool = False


PRE_587 = Profile(name="pre-587", claim_index=False)
UPSTREAM = Profile(name="upstream", claim_index=True)
PR592 = Profile(
    name="pr592",
    claim_index=True,
    finalize_releases_label=True,
    scalein_skips_migrating=True,
    lost_clears_podname=True,
    pod_map_by_podname=True,
)
FIXED = Profile(
    name="fixed",
    claim_index=True,
    finalize_releases_label=True,
    relabel_for_holder=True,
    finalize_own_spec_pod=True,
    scalein_skips_migrating=True,
    lost_clears_podname=True,
    lost_ends_migration=True,
    pod_map_by_podname=True,
)

PROFILES = {p.name: p for p in (PRE_587, UPSTREAM, PR592, FIXED)}
ALIASES = {"eb9b356": "upstream"}


def valid_names() -> str:
    """The accepted profile names, for error messages."""
    return "pre-587, upstream (alias eb9b356), pr592, fixed"


def get_profile(name: str) -> Profile:
    """The profile of a name or alias; KeyError with the valid names otherwise."""
    canonical = ALIASES.get(name, name)
    if canonical not in PROFILES:
        raise KeyError(f"unknown profile {name!r}: use one of {valid_names()}")
    return PROFILES[canonical]
