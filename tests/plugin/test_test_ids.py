"""Reports name a test as imported (``pkg/test_x.py::test``), whatever folder its package is
installed in: a virtualenv under the working folder must not show in index.html,
result.json, summary.json or the test's folder name."""

from __future__ import annotations

import json

pytest_plugins = ["pytester"]

INNER = """
def test_a(scenario):
    pass
"""
KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: nowhere, context: {cluster: c, user: u}}]
current-context: nowhere
"""


def test_a_test_under_site_packages_is_named_from_its_package(pytester):
    package = pytester.path / ".venv" / "lib" / "python3.11" / "site-packages" / "pkgx"
    package.mkdir(parents=True)
    (package / "test_inner.py").write_text(INNER)
    reports = pytester.path / "reports"
    kubeconfig = pytester.path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    # An existing cluster that does not answer: the scenario's set-up fails at once (no
    # cluster is built or started), and the test still gets its result.
    result = pytester.runpytest(
        "-p", "no:xdist", str(package / "test_inner.py"), "--operator=model:fixed",
        f"--mochaos-reports-dir={reports}", "--mochaos-cluster=existing",
        f"--mochaos-kubeconfig={kubeconfig}", "--mochaos-context=nowhere",
        "--mochaos-allow-context=nowhere",
    )  # fmt: skip
    result.assert_outcomes(errors=1)
    run = (reports / "latest").resolve()
    (folder,) = [p for p in run.iterdir() if p.is_dir()]
    assert folder.name == "pkgx.test_inner.test_a"
    assert (
        json.loads((folder / "result.json").read_text())["nodeid"] == "pkgx/test_inner.py::test_a"
    )
    for page in ("index.html", "summary.json"):
        text = (run / page).read_text()
        assert "pkgx/test_inner.py::test_a" in text, page
        assert "site-packages" not in text, page
