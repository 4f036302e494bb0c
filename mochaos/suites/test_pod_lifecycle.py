"""A claim's pod disappears under it: B3 (Lost keeps spec.podName) and B4 (no event).

docs/bugs.md#b3 and #b4. A correct operator notices the pod is
gone, clears the claim's spec and binds it to another pod.
"""

from __future__ import annotations

import pytest

from mochaos.scenario import POD_LOSS, Scenario, pod_unlabelled, remove_label

pytestmark = pytest.mark.scenario


def test_pod_lost_while_bound(scenario: Scenario):
    """B3: the bound pod is deleted; the claim must not keep pointing at it."""
    sc = scenario
    POD_LOSS.drive(sc, POD_LOSS.setup(sc))


def test_label_removed_then_pod_deleted(scenario: Scenario):
    """B4: the pod loses its claimed-by label first, then is deleted: is the claim told?"""
    sc = scenario
    lost = POD_LOSS.setup(sc)
    sc.inject(remove_label(lost.pod))
    unlabelled = sc.when(pod_unlabelled(lost.pod), timeout=sc.waits.bind)
    POD_LOSS.lose_pod(sc, lost, trigger=unlabelled)
