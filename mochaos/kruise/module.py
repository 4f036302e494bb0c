"""OpenKruise's Go module as mo-chaos builds and reads it: the wrapper module, the manifests.

kruise's go.mod pins every k8s.io module with a replace block, so ``go install …@v1.4.0`` is
refused; a wrapper module that requires it and repeats that block builds its manager
(``main.go`` at the module root). The wrapper raises :data:`RAISED` above kruise's pins.
Its CRDs (``config/crd/bases``) and webhook configurations (``config/webhook``, with the
kustomize patch and name prefix of ``config/default`` applied) are read from the same
module at build time into the cache, never committed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mochaos.tooling.gomod import replace_lines

MODULE = "github.com/openkruise/kruise"
DEFAULT_VERSION = "v1.4.0"
"""What matrixone-operator's main branch pins (kruise-api in go.mod, the kruise chart 1.4.0)."""
BINARY = "kruise-manager"
CRDS_FILE = "crds.yaml"
WEBHOOKS_FILE = "webhooks.yaml"
RECIPE = "wrapper-v1"
RAISED = {"github.com/modern-go/reflect2": "v1.0.2"}
"""Dependencies required above kruise's own pins. reflect2 v1.0.1 (pinned by kruise 1.4.0)
reads runtime internals that changed in Go 1.18: jsoniter then crashes the manager with a
SIGSEGV in ``reflect.mapiternext``; v1.0.2 is its fix for Go >= 1.18."""


def wrapper_gomod(kruise_gomod: str) -> str:
    """The wrapper module's go.mod before ``go get``: kruise's replace directives."""
    return "\n".join(["module mochaos.local/kruisebin", "", *replace_lines(kruise_gomod)]) + "\n"


def go_steps(version: str) -> list[list[str]]:
    """The go commands that resolve the wrapper (run in its folder, in this order)."""
    return [
        ["get", "-tool", f"{MODULE}@{version}"],
        ["get", *(f"{m}@{v}" for m, v in RAISED.items())],
    ]


def crds(module_dir: Path) -> list[dict[str, Any]]:
    """Every CRD of ``config/crd/bases``, by file name."""
    files = sorted((module_dir / "config" / "crd" / "bases").glob("*.yaml"))
    docs = [
        d
        for f in files
        for d in yaml.safe_load_all(f.read_text())
        if _kind(d) == "CustomResourceDefinition"
    ]
    if not docs:
        raise ValueError(f"{module_dir} has no CRDs in config/crd/bases")
    return docs


def webhook_configurations(module_dir: Path) -> list[dict[str, Any]]:
    """The mutating and validating webhook configurations as kruise's kustomization renders
    them: ``config/webhook/manifests.yaml``, each webhook merged with its entry of
    ``patch_manifests.yaml`` (selectors), named with ``config/default``'s ``namePrefix``
    (the names kruise-manager looks for). kruise-manager fills in the CA bundle and, with
    WEBHOOK_HOST set, turns each service reference into ``https://HOST:PORT/path``."""
    webhook = module_dir / "config" / "webhook"
    configs = [d for d in yaml.safe_load_all((webhook / "manifests.yaml").read_text()) if d]
    patches = {
        (_kind(p), p["metadata"]["name"]): p
        for p in yaml.safe_load_all((webhook / "patch_manifests.yaml").read_text())
        if p
    }
    default = yaml.safe_load((module_dir / "config" / "default" / "kustomization.yaml").read_text())
    prefix = default.get("namePrefix", "")
    out = []
    for config in configs:
        patch = patches.get((_kind(config), config["metadata"]["name"]), {})
        by_name = {w["name"]: w for w in patch.get("webhooks", [])}
        hooks = [_merged(w, by_name.get(w["name"], {})) for w in config.get("webhooks", [])]
        out.append({
            "apiVersion": config["apiVersion"],
            "kind": config["kind"],
            "metadata": {"name": prefix + config["metadata"]["name"]},
            "webhooks": hooks,
        })  # fmt: skip
    return out


def _merged(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A strategic merge of maps (lists and scalars in ``patch`` replace ``base``'s)."""
    out = dict(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _kind(doc: Any) -> str:
    return str(doc.get("kind", "")) if isinstance(doc, dict) else ""


def write_manifests(module_dir: Path, out: Path) -> None:
    """Write :data:`CRDS_FILE` and :data:`WEBHOOKS_FILE` from the module into ``out``."""
    (out / CRDS_FILE).write_text(yaml.safe_dump_all(crds(module_dir), sort_keys=False))
    hooks = webhook_configurations(module_dir)
    (out / WEBHOOKS_FILE).write_text(yaml.safe_dump_all(hooks, sort_keys=False))


def read_manifests(path: Path) -> list[dict[str, Any]]:
    """The documents of one manifests file written by :func:`write_manifests`."""
    return [d for d in yaml.safe_load_all(path.read_text()) if d]
