"""ControllerRevisions: the pod templates a workload has had, so an update can tell what
changed between a pod's revision and the update revision.

Like kruise (cloneset/revision/cloneset_revision.go, statefulset newRevision and
getStatefulSetRevisions, both on k8s' controller history), each revision is an ``apps/v1``
ControllerRevision named ``<set>-<hash>``, labelled with the template's labels, owned by the
workload, holding ``{"spec": {"template": {..., "$patch": "replace"}}}`` and a revision
number; the update revision of an unchanged template is reused, an older equal one is
renumbered to come last, and revisions beyond ``revisionHistoryLimit`` (default 10) that no
pod uses are deleted.
"""

from __future__ import annotations

import copy

from mochaos.doubles.kruise.api import AlreadyExists, NotFound, Obj, Resource
from mochaos.doubles.kruise.cache import Cache
from mochaos.doubles.kruise.naming import short_hash
from mochaos.doubles.kruise.objects import controller_ref, name_of, namespace_of, uid_of
from mochaos.doubles.kruise.writer import Writer

REVISIONS = Resource("ControllerRevision", "controllerrevisions", "apps", "v1")
PATCH = "$patch"
DEFAULT_HISTORY_LIMIT = 10


def template_of(revision: Obj) -> Obj:
    """The pod template a revision holds."""
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop(PATCH, None)
    return template


class History:
    """The revisions of one workload, read from the cache, written through ``writer``."""

    def __init__(self, writer: Writer, cache: Cache, workload: Obj, res: Resource) -> None:
        self._writer = writer
        self._cache = cache
        self._workload = workload
        self._res = res

    def owned(self) -> list[Obj]:
        """The workload's revisions, oldest number first."""
        uid = uid_of(self._workload)
        items = self._cache.list(
            namespace_of(self._workload),
            where=lambda o: any(
                r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or []
            ),
        )
        return sorted(items, key=lambda o: int(o.get("revision", 0)))

    def find(self, name: str) -> Obj | None:
        """The revision ``name`` or whose short hash matches (EqualToRevisionHash)."""
        for rev in self.owned():
            if name_of(rev) == name or short_hash(name_of(rev)) == short_hash(name):
                return rev
        return None

    def ensure(self, name: str, template: Obj) -> None:
        """getActiveRevisions: make ``name`` the latest revision (create or renumber)."""
        owned = self.owned()
        latest = int(owned[-1].get("revision", 0)) if owned else 0
        current = next((r for r in owned if name_of(r) == name), None)
        if current is not None:
            if current is owned[-1]:
                return
            current["revision"] = latest + 1
            self._writer.update(REVISIONS, current, msg="renumber revision", revision=name)
            return
        body = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": namespace_of(self._workload),
                "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                "ownerReferences": [controller_ref(self._workload, self._res)],
            },
            "data": {"spec": {"template": {**copy.deepcopy(template), PATCH: "replace"}}},
            "revision": latest + 1,
        }
        try:
            self._writer.create(REVISIONS, body, msg="create revision", revision=name)
        except AlreadyExists:
            return

    def truncate(self, in_use: set[str]) -> None:
        """truncateHistory: drop the oldest revisions over the limit that nothing uses."""
        limit = (self._workload.get("spec") or {}).get("revisionHistoryLimit")
        limit = DEFAULT_HISTORY_LIMIT if limit is None else int(limit)
        used = {short_hash(n) for n in in_use}
        idle = [r for r in self.owned() if short_hash(name_of(r)) not in used]
        for rev in idle[: max(len(idle) - limit, 0)]:
            try:
                self._writer.delete(
                    REVISIONS, rev, msg="delete old revision", revision=name_of(rev)
                )
            except NotFound:
                continue
