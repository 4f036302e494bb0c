"""Our own CloneSet and StatefulSet CRDs (``crds/*.yaml``, labelled ``mochaos.io/crds:
own``), installed when absent.

A CRD of the same name that does not carry our label was installed by someone else (an
operator target bringing kruise's own CRDs, a real kruise): it is left alone. One that
carries the label is brought up to date with our file when the file changed (a hash of it
rides in an annotation: re-applying an unchanged CRD would make the apiserver rebuild its
handler for nothing). Either way we wait until the resource answers a LIST.
"""

from __future__ import annotations

import hashlib
import time
from importlib import resources

import yaml

from mochaos.doubles.kruise.api import (
    CLONESETS,
    CRDS,
    STATEFULSETS,
    Api,
    ApiError,
    NotFound,
    Obj,
    Resource,
)
from mochaos.doubles.kruise.logs import Log
from mochaos.errors import InfraError

SCHEMA_LABEL = "mochaos.io/crds"
"""The owner label of every CRD mo-chaos installs (mochaos.operator.crds.OWNER_LABEL)."""
HASH_ANNOTATION = "mochaos.io/schema-hash"
OWN = "own"
FILES = ("clonesets.yaml", "statefulsets.yaml")
SERVE_TIMEOUT = 30.0


def definitions() -> list[Obj]:
    """Our CRD documents, each annotated with the hash of its file."""
    root = resources.files("mochaos.doubles.kruise") / "crds"
    out = []
    for name in FILES:
        text = (root / name).read_text()
        crd = yaml.safe_load(text)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        crd["metadata"].setdefault("annotations", {})[HASH_ANNOTATION] = digest
        out.append(crd)
    return out


def is_ours(crd: Obj) -> bool:
    """Whether a CRD carries our schema label."""
    return ((crd.get("metadata") or {}).get("labels") or {}).get(SCHEMA_LABEL) == OWN


def ensure(api: Api, log: Log) -> list[str]:
    """Install or update our CRDs where nobody else's are; wait until they serve. Returns
    one line per CRD saying what was done."""
    done = []
    for crd in definitions():
        name = crd["metadata"]["name"]
        try:
            current = api.get(CRDS, None, name)
        except NotFound:
            current = None
        if current is not None and not is_ours(current):
            done.append(f"{name}: installed by someone else, left alone")
            log.info("crd left alone (not ours)", crd=name)
            continue
        want = crd["metadata"]["annotations"][HASH_ANNOTATION]
        have = ((current or {}).get("metadata") or {}).get("annotations", {}).get(HASH_ANNOTATION)
        if have == want:
            done.append(f"{name}: ours, up to date")
            continue
        api.apply(CRDS, crd, manager="mochaos-kruise-double")
        done.append(f"{name}: {'updated' if current else 'installed'} (mochaos.io/crds: own)")
        log.info("crd applied", crd=name, existed=current is not None)
    for res in (CLONESETS, STATEFULSETS):
        _wait_served(api, res)
    return done


def _wait_served(api: Api, res: Resource) -> None:
    deadline = time.monotonic() + SERVE_TIMEOUT
    last = ""
    while time.monotonic() < deadline:
        try:
            api.list(res)
            return
        except ApiError as err:
            last = str(err)
        time.sleep(0.1)
    raise InfraError(
        f"{res.plural}.{res.group} not served after {SERVE_TIMEOUT:.0f}s ({last})",
        hint="check the CRD's conditions (kubectl get crd -o yaml) and the apiserver log",
    )
