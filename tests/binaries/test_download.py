"""Release downloads against a local HTTP server: verified, atomic, bounded, and a fallback."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mochaos import exits
from mochaos.binaries import control_plane, download
from mochaos.binaries.component import Component
from mochaos.binaries.download import (
    ChecksumMismatch,
    Fetcher,
    Sources,
    Unavailable,
    obtain,
)
from mochaos.errors import UsageError
from mochaos.paths import cache_dir

ARCH = download.release_arch()
K8S = control_plane.component("kubernetes")
ETCD = control_plane.component("etcd")
KWOK = control_plane.component("kwok")

STALL = object()
"""A route that accepts the request and never answers (until the server stops)."""


class Redirect(str):
    """A route answering 302 to this location (as GitHub's download URLs do)."""


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Server(ThreadingHTTPServer):
    """Serves ``routes`` (path → bytes, an HTTP status, STALL, or a list of those, one per
    request, the last repeating) and records every path asked for."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.routes: dict[str, object] = {}
        self.hits: list[str] = []
        self.stop = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def count(self, path: str) -> int:
        return self.hits.count(path)


class Handler(BaseHTTPRequestHandler):
    server: Server

    def do_GET(self) -> None:
        self.server.hits.append(self.path)
        route = self.server.routes.get(self.path, 404)
        if isinstance(route, list):
            route = route.pop(0) if len(route) > 1 else route[0]
        if route is STALL:
            self.server.stop.wait(10)
            return
        if isinstance(route, int):
            self.send_error(route)
            return
        if isinstance(route, Redirect):
            self.send_response(302)
            self.send_header("Location", route)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        assert isinstance(route, bytes)
        self.send_response(200)
        self.send_header("Content-Length", str(len(route)))
        self.end_headers()
        self.wfile.write(route)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield srv
    srv.stop.set()
    srv.shutdown()
    srv.server_close()


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private cache, no proxy, no mirror settings from the caller's environment."""
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "cache"))
    for var in (download.MODE_ENV, *Sources.ENV.values()):
        monkeypatch.delenv(var, raising=False)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def sources(srv: Server) -> Sources:
    return Sources(
        kubernetes=f"{srv.url}/k8s",
        etcd=f"{srv.url}/etcd",
        kwok=f"{srv.url}/kwok",
        kwok_release=f"{srv.url}/api",
    )


def fast(**kw: float) -> Fetcher:
    """A fetcher with test-sized timeouts and no back-off."""
    return Fetcher(**{"connect_timeout": 2, "read_timeout": 2, "backoff": 0, **kw})


def serve_kubernetes(srv: Server) -> dict[str, bytes]:
    files = {b: f"#!{b} {K8S.version}\n".encode() * 1000 for b in K8S.binaries}
    for b, data in files.items():
        path = f"/k8s/{K8S.version}/bin/linux/{ARCH}/{b}"
        srv.routes[path] = data
        srv.routes[f"{path}.sha256"] = sha(data).encode()  # dl.k8s.io: the digest alone
    return files


def etcd_tarball(member_data: bytes, *, member: str | None = None) -> bytes:
    folder = f"etcd-{ETCD.version}-linux-{ARCH}"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in (
            (f"{folder}/README.md", b"readme"),
            (member or f"{folder}/etcd", member_data),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def serve_etcd(srv: Server, tarball: bytes) -> None:
    name = f"etcd-{ETCD.version}-linux-{ARCH}.tar.gz"
    srv.routes[f"/etcd/{ETCD.version}/{name}"] = tarball
    other = f"{'0' * 64}  etcd-{ETCD.version}-darwin-arm64.zip"
    srv.routes[f"/etcd/{ETCD.version}/SHA256SUMS"] = f"{other}\n{sha(tarball)}  {name}\n".encode()


def serve_kwok(srv: Server, *, digests: bool = True) -> dict[str, bytes]:
    files = {b: f"{b} {KWOK.version}".encode() * 500 for b in KWOK.binaries}
    assets = []
    for b, data in files.items():
        srv.routes[f"/kwok/{KWOK.version}/{b}-linux-{ARCH}"] = data
        assets.append(
            {"name": f"{b}-linux-{ARCH}", "digest": f"sha256:{sha(data)}" if digests else None}
        )
    srv.routes[f"/api/{KWOK.version}"] = json.dumps(
        {"tag_name": KWOK.version, "assets": assets}
    ).encode()
    return files


class Recorder:
    """Stands in for the Go build: records what it was asked to build."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, targets: list) -> None:
        self.calls.append([t.name for t in targets])


def fetch(
    srv: Server,
    targets: list[Component],
    *,
    mode: str | None = "download",
    builder: Recorder | None = None,
    progress: Callable[[str], None] = lambda _: None,
    fetcher: Fetcher | None = None,
) -> None:
    """:func:`obtain` from ``srv`` with test-sized timeouts."""
    obtain(
        targets,
        build=builder or Recorder(),
        progress=progress,
        mode=mode,
        sources=sources(srv),
        fetcher=fetcher or fast(),
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# -- a good download ---------------------------------------------------------------------


def test_kubernetes_binaries_download_verified_executable_and_stamped(server: Server) -> None:
    files = serve_kubernetes(server)
    lines: list[str] = []
    recorder = Recorder()
    fetch(server, [K8S], builder=recorder, progress=lines.append)
    assert recorder.calls == []
    for b, data in files.items():
        assert K8S.path(b).read_bytes() == data
        assert K8S.path(b).stat().st_mode & stat.S_IXUSR
        assert any(ln.strip().startswith("[") and f"{b} downloaded in" in ln for ln in lines)
    assert leftovers(K8S.directory) == [".complete"]
    assert K8S.stamp.read_text().split() == [download.fingerprint(K8S), download.RECIPE]
    assert K8S.obtained_by() == download.RECIPE and K8S.is_built()


def test_a_changed_binary_or_foreign_stamp_is_not_taken_as_downloaded(server: Server) -> None:
    serve_kubernetes(server)
    fetch(server, [K8S])
    assert K8S.is_built()
    K8S.stamp.write_text(f"{'f' * 16} {download.RECIPE}\n")
    assert K8S.obtained_by() is None
    K8S.stamp.write_text(f"{download.fingerprint(K8S)} {download.RECIPE}\n")
    K8S.path("kubectl").unlink()
    assert not K8S.is_built()


def test_progress_reports_bytes_and_percent_at_most_every_interval(server: Server) -> None:
    serve_kubernetes(server)
    lines: list[str] = []
    fetch(server, [K8S], progress=lines.append, fetcher=fast(progress_every=0))
    assert any("MB of" in ln and "%)" in ln for ln in lines)
    quiet: list[str] = []
    fetch(server, [K8S], progress=quiet.append, fetcher=fast(progress_every=3600))
    assert not any("MB of" in ln for ln in quiet)


def test_etcd_is_extracted_from_its_verified_tarball(server: Server) -> None:
    serve_etcd(server, etcd_tarball(b"the etcd server"))
    fetch(server, [ETCD])
    assert ETCD.path("etcd").read_bytes() == b"the etcd server"
    assert ETCD.path("etcd").stat().st_mode & stat.S_IXUSR
    assert leftovers(ETCD.directory) == [".complete"]


def test_a_tarball_without_the_member_is_unavailable(server: Server) -> None:
    serve_etcd(server, etcd_tarball(b"x", member="elsewhere/etcd"))
    with pytest.raises(Unavailable, match="has no etcd-"):
        fetch(server, [ETCD])
    assert not ETCD.path("etcd").exists() and leftovers(ETCD.directory) == []


def test_kwok_uses_the_github_release_digests(server: Server) -> None:
    files = serve_kwok(server)
    fetch(server, [KWOK])
    assert {b: KWOK.path(b).read_bytes() for b in KWOK.binaries} == files


def test_a_redirect_to_another_host_is_followed(server: Server) -> None:
    files = serve_kwok(server)
    other = Server()  # the asset host GitHub redirects downloads to
    threading.Thread(target=other.serve_forever, args=(0.01,), daemon=True).start()
    try:
        path = f"/kwok/{KWOK.version}/kwokctl-linux-{ARCH}"
        other.routes["/signed/kwokctl"] = files["kwokctl"]
        server.routes[path] = Redirect(f"{other.url}/signed/kwokctl")
        fetch(server, [KWOK])
        assert KWOK.path("kwokctl").read_bytes() == files["kwokctl"]
        assert other.hits == ["/signed/kwokctl"]
    finally:
        other.shutdown()
        other.server_close()


def test_kwok_without_a_published_digest_is_refused_before_downloading(server: Server) -> None:
    serve_kwok(server, digests=False)
    with pytest.raises(Unavailable, match="no SHA-256 published for kwok-linux-"):
        fetch(server, [KWOK])
    assert server.count(f"/kwok/{KWOK.version}/kwok-linux-{ARCH}") == 0


# -- failures ------------------------------------------------------------------------------


def test_a_checksum_mismatch_names_file_and_digests_and_is_not_retried_or_built_around(
    server: Server,
) -> None:
    files = serve_kubernetes(server)
    path = f"/k8s/{K8S.version}/bin/linux/{ARCH}/kube-scheduler"
    server.routes[path] = files["kube-scheduler"] + b"tampered"
    recorder = Recorder()
    with pytest.raises(ChecksumMismatch) as err:
        fetch(server, [K8S], mode="auto", builder=recorder)
    message = str(err.value)
    assert "\n" not in message and "kube-scheduler" in message
    assert sha(files["kube-scheduler"]) in message
    assert sha(files["kube-scheduler"] + b"tampered") in message
    assert server.count(path) == 1 and recorder.calls == []
    assert not K8S.path("kube-scheduler").exists() and not K8S.is_built()
    assert leftovers(K8S.directory) == []


def test_a_404_fails_download_mode_in_one_line(server: Server) -> None:
    serve_kubernetes(server)
    del server.routes[f"/k8s/{K8S.version}/bin/linux/{ARCH}/kubectl"]
    with pytest.raises(Unavailable) as err:
        fetch(server, [K8S])
    assert str(err.value).startswith("release binaries not available (127.0.0.1:")
    assert "HTTP 404" in str(err.value) and "/kubectl" in str(err.value)
    assert "\n" not in str(err.value) and err.value.exit_code == exits.INFRA
    assert not K8S.is_built()


def test_a_stalled_server_times_out_after_a_bounded_number_of_attempts(server: Server) -> None:
    path = f"/k8s/{K8S.version}/bin/linux/{ARCH}/kube-apiserver.sha256"
    server.routes[path] = STALL
    t0 = time.monotonic()
    with pytest.raises(Unavailable, match=r"no data for 0.2s \(2 attempts\)"):
        fetch(server, [K8S], fetcher=fast(read_timeout=0.2, attempts=2))
    assert server.count(path) == 2
    assert time.monotonic() - t0 < 5


def test_a_transient_error_is_retried_into_success(server: Server) -> None:
    files = serve_kubernetes(server)
    path = f"/k8s/{K8S.version}/bin/linux/{ARCH}/kubectl"
    server.routes[path] = [503, files["kubectl"]]
    fetch(server, [K8S], fetcher=fast(attempts=2))
    assert server.count(path) == 2 and K8S.path("kubectl").read_bytes() == files["kubectl"]


def test_a_truncated_body_is_transient(server: Server) -> None:
    class Short(Handler):
        def do_GET(self) -> None:
            self.server.hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"only a part")

    server.RequestHandlerClass = Short
    with pytest.raises(Unavailable, match=r"connection broken .*\(2 attempts\)"):
        Fetcher(backoff=0, attempts=2).to_file(
            f"{server.url}/x", Path(os.environ["MOCHAOS_CACHE"]).parent, lambda *_: None
        )
    assert server.count("/x") == 2


def test_an_unreachable_host_is_tried_once(server: Server) -> None:
    url = server.url
    server.shutdown()
    server.server_close()
    fetcher = fast(attempts=3)
    with pytest.raises(Unavailable, match="cannot connect"):
        fetcher.text(f"{url}/a")
    assert list(fetcher.unreachable) == [url.removeprefix("http://")]
    with pytest.raises(Unavailable, match="cannot connect"):
        fetcher.text(f"{url}/b")


# -- choosing --------------------------------------------------------------------------------


def test_auto_builds_what_cannot_be_downloaded_and_says_so_in_one_line(server: Server) -> None:
    files = serve_kubernetes(server)  # etcd and kwok: 404
    lines: list[str] = []
    recorder = Recorder()
    fetch(server, [K8S, ETCD, KWOK], mode=None, builder=recorder, progress=lines.append)
    assert recorder.calls == [["etcd", "kwok"]]
    assert K8S.path("kubectl").read_bytes() == files["kubectl"]
    said = [ln for ln in lines if "not available" in ln]
    assert len(said) == 1 and said[0].startswith("mo-chaos: release binaries not available (")
    assert said[0].endswith(
        f"building etcd {ETCD.version}, kwok {KWOK.version} from Go modules instead"
    )
    assert "HTTP 404" in said[0]


def test_auto_offline_falls_back_at_once_in_one_line(server: Server) -> None:
    host = server.url.removeprefix("http://")
    server.shutdown()
    server.server_close()
    lines: list[str] = []
    recorder = Recorder()
    fetch(server, [K8S, ETCD, KWOK], mode=None, builder=recorder, progress=lines.append)
    assert recorder.calls == [["kubernetes", "etcd", "kwok"]]
    said = [ln for ln in lines if "not available" in ln]
    assert len(said) == 1 and said[0].count(host) == 1
    assert said[0].startswith(f"mo-chaos: release binaries not available ({host}: cannot connect (")
    assert said[0].endswith(
        f"building kubernetes {K8S.version}, etcd {ETCD.version}, kwok {KWOK.version} "
        "from Go modules instead"
    )


def test_build_mode_never_downloads(server: Server) -> None:
    serve_kubernetes(server)
    recorder = Recorder()
    fetch(server, [K8S], mode="build", builder=recorder)
    assert recorder.calls == [["kubernetes"]] and server.hits == []


def test_components_without_releases_are_built(server: Server) -> None:
    serve_kubernetes(server)
    double = Component("some-double", "v0.0.1", ("double",), "install-v1")
    recorder = Recorder()
    fetch(server, [K8S, double], builder=recorder)
    assert recorder.calls == [["some-double"]] and K8S.is_built()


def test_an_unknown_arch_is_refused_in_one_line() -> None:
    with pytest.raises(Unavailable, match=r"no release binaries for Linux/riscv64 \(only"):
        download.release_arch("riscv64")
    assert download.release_arch("aarch64") == "arm64"
    assert download.release_arch("x86_64") == "amd64"


def test_binaries_mode_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert download.binaries_mode() == "auto"
    monkeypatch.setenv(download.MODE_ENV, "Download")
    assert download.binaries_mode() == "download"


def test_a_bad_mode_is_a_usage_error_before_anything_happens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(download.MODE_ENV, "sometimes")
    with pytest.raises(UsageError) as err:
        control_plane.build(progress=lambda _: None)
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("MOCHAOS_BINARIES='sometimes' is not one of auto, download")
    assert not (Path(os.environ["MOCHAOS_CACHE"]) / "bin").exists()


def test_mirror_urls_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Sources.from_env() == Sources()
    monkeypatch.setenv("MOCHAOS_KUBERNETES_URL", "http://mirror.local/k8s/")
    monkeypatch.setenv("MOCHAOS_KWOK_RELEASE_URL", "https://mirror.local/kwok-api")
    got = Sources.from_env()
    assert got.kubernetes == "http://mirror.local/k8s" and got.etcd == Sources().etcd
    assert got.kwok_release == "https://mirror.local/kwok-api"
    monkeypatch.setenv("MOCHAOS_ETCD_URL", "file:///srv/etcd")
    with pytest.raises(UsageError, match="MOCHAOS_ETCD_URL='file:///srv/etcd' is not an http"):
        Sources.from_env()


def test_checksum_lists_parse_like_sha256sum() -> None:
    a, b = "a" * 64, "B" * 64
    listed = download.parse_sha256sums(f"{a}  one.tar.gz\n{b} *two.zip\nnoise\n")
    assert listed == {"one.tar.gz": a, "two.zip": b.lower()}


# -- through the build entry point ----------------------------------------------------------


def test_build_downloads_in_download_mode_from_mirror_env(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve_kubernetes(server)
    serve_etcd(server, etcd_tarball(b"etcd"))
    serve_kwok(server)
    src = sources(server)
    for key, env in Sources.ENV.items():
        monkeypatch.setenv(env, getattr(src, key))
    monkeypatch.setenv(download.MODE_ENV, "download")
    for c in control_plane.COMPONENTS:
        if c.name not in download.PLANS:  # a component added later: treat it as cached
            c.directory.mkdir(parents=True)
            for b in (*c.binaries, *c.files):
                c.path(b).write_bytes(b"")
            c.stamp.write_text(f"{download.fingerprint(c)} {download.RECIPE}\n")
    lines: list[str] = []
    paths = control_plane.build(progress=lines.append)
    assert all(p.is_file() for p in paths.values())
    assert [c.obtained_by() for c in control_plane.COMPONENTS] == [download.RECIPE] * len(
        control_plane.COMPONENTS
    )
    lines.clear()
    control_plane.build(progress=lines.append)
    assert lines == [
        f"mo-chaos: binaries cached in {cache_dir() / 'bin'} ("
        + ", ".join(f"{c.name} {c.version} {download.RECIPE}" for c in control_plane.COMPONENTS)
        + ")"
    ]


def test_the_environment_proxy_is_used_unless_no_proxy_names_the_host(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plain-HTTP proxy gets the absolute URL as the request path: the server plays one.
    server.routes["http://mirror.invalid/sum"] = b"via the proxy"
    monkeypatch.setenv("http_proxy", server.url)
    monkeypatch.setenv("no_proxy", "elsewhere.invalid")
    assert fast().text("http://mirror.invalid/sum") == "via the proxy"
    monkeypatch.setenv("no_proxy", "mirror.invalid")
    with pytest.raises(Unavailable, match=r"mirror\.invalid: name not resolved"):
        fast().text("http://mirror.invalid/sum")


def test_offline_without_go_the_command_says_both_in_order(server: Server, tmp_path: Path) -> None:
    """``cluster build`` on a machine with neither the release hosts (here: a closed port)
    nor Go: the fallback line, then the build's own one-line error, exit status 3."""
    url = server.url
    server.shutdown()
    server.server_close()
    dirs = os.environ.get("PATH", "").split(os.pathsep)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env |= {env_var: url for env_var in Sources.ENV.values()}
    env["PATH"] = os.pathsep.join(d for d in dirs if not os.access(Path(d) / "go", os.X_OK))
    proc = subprocess.run(
        [sys.executable, "-m", "mochaos", "cluster", "build"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == exits.INFRA, proc.stderr
    assert lines[-2].startswith("mo-chaos: release binaries not available (127.0.0.1:")
    assert lines[-1] == "mo-chaos: go not found: install Go >= 1.26 and put it on PATH"
