"""Official release binaries for the local cluster, checked against their published SHA-256.

:func:`obtain` runs before the Go build of :mod:`mochaos.binaries.obtain`: ``MOCHAOS_BINARIES``
chooses ``auto`` (download, build what cannot be had), ``download`` or ``build``. Base URLs
can point at a mirror (:class:`Sources`); nothing is made executable before its digest matches.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import tarfile
import tempfile
import time
import urllib.request
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol, TypeVar
from urllib.parse import urlsplit

import urllib3
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ProxyError,
    ReadTimeoutError,
    SSLError,
)

from mochaos import __version__
from mochaos.errors import BuildError, UsageError
from mochaos.tooling.progress_callback import Progress

RECIPE = "download-v1"
"""Recipe name in the stamp of a downloaded component (a build's is e.g. ``wrapper-v1``)."""

MODE_ENV = "MOCHAOS_BINARIES"
MODES = ("auto", "download", "build")

ARCHES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
"""``platform.machine()`` → the release arch; every project here publishes linux amd64/arm64."""

SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
CHECKSUM_FILE_LIMIT = 1 << 20
"""Bytes read at most from a checksum file or release document (a captive portal's page
is not read whole)."""

T = TypeVar("T")


class Unavailable(BuildError):
    """A release binary cannot be had: unreachable, HTTP error, timeout, no published digest."""


class ChecksumMismatch(BuildError):
    """A download's SHA-256 differs from the published one; never retried, never built around."""


class Target(Protocol):
    """What :func:`obtain` needs of a component (:class:`mochaos.binaries.component.Component`)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def binaries(self) -> tuple[str, ...]: ...
    @property
    def directory(self) -> Path: ...
    @property
    def stamp(self) -> Path: ...
    def path(self, binary: str) -> Path: ...


# -- where the releases live ---------------------------------------------------------------


@dataclass(frozen=True)
class Sources:
    """Base URLs of the releases; each is overridden by its environment variable (a mirror
    serves the same layout below its base: docs/local-cluster.md, "How the binaries are
    obtained").

    - ``kubernetes`` (``MOCHAOS_KUBERNETES_URL``): ``<base>/<v>/bin/linux/<arch>/<binary>``
      and ``<binary>.sha256`` next to it, holding the digest alone (kubernetes/release
      pkg/release/release.go ``WriteChecksums``; kubernetes/website install-kubectl-linux.md).
    - ``etcd`` (``MOCHAOS_ETCD_URL``): ``<base>/<v>/etcd-<v>-linux-<arch>.tar.gz`` holding
      ``etcd-<v>-linux-<arch>/etcd``, and ``<base>/<v>/SHA256SUMS`` (``shasum -a 256`` lines),
      the GitHub release's assets (etcd-io/etcd release-3.6 scripts/build-binary.sh:88-93,
      scripts/release.sh:246,391); ``https://storage.googleapis.com/etcd`` has the same
      layout (release.sh:261-263).
    - ``kwok`` (``MOCHAOS_KWOK_URL``): ``<base>/<v>/<binary>-linux-<arch>`` (kubernetes-sigs/
      kwok v0.8.0 hack/releases.sh:201-206, which uploads the binaries and nothing else).
    - ``kwok_release`` (``MOCHAOS_KWOK_RELEASE_URL``): ``<base>/<v>``, the GitHub API's
      release document, whose assets carry the ``sha256:`` digest GitHub computes at upload
      (since June 2025): kwok publishes no checksum file.
    """

    kubernetes: str = "https://dl.k8s.io/release"
    etcd: str = "https://github.com/etcd-io/etcd/releases/download"
    kwok: str = "https://github.com/kubernetes-sigs/kwok/releases/download"
    kwok_release: str = "https://api.github.com/repos/kubernetes-sigs/kwok/releases/tags"

    ENV: ClassVar[dict[str, str]] = {
        "kubernetes": "MOCHAOS_KUBERNETES_URL",
        "etcd": "MOCHAOS_ETCD_URL",
        "kwok": "MOCHAOS_KWOK_URL",
        "kwok_release": "MOCHAOS_KWOK_RELEASE_URL",
    }

    @classmethod
    def from_env(cls) -> Sources:
        """The defaults, each replaced by its environment variable when set (http(s) only)."""
        given = {k: os.environ.get(env, "").strip().rstrip("/") for k, env in cls.ENV.items()}
        for key, url in given.items():
            if url and urlsplit(url).scheme not in ("http", "https"):
                raise UsageError(
                    f"{cls.ENV[key]}={url!r} is not an http(s) URL",
                    hint="set it to the base URL of a mirror, or unset it for the official one",
                )
        return cls(**{k: v for k, v in given.items() if v})


@dataclass(frozen=True)
class Asset:
    """One file to download for one cached binary (``member``: its path in a .tar.gz)."""

    binary: str
    url: str
    member: str | None = None

    @property
    def file_name(self) -> str:
        """The downloaded file's name, as checksum lists name it."""
        return self.url.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Plan:
    """The assets of one component and how to read their published digests."""

    assets: tuple[Asset, ...]
    digests: Callable[[Fetcher], dict[str, str]]
    """Fetches the published SHA-256 of every asset, by asset URL."""


def _kubernetes(t: Target, arch: str, s: Sources) -> Plan:
    base = f"{s.kubernetes}/{t.version}/bin/linux/{arch}"
    assets = tuple(Asset(b, f"{base}/{b}") for b in t.binaries)

    def digests(f: Fetcher) -> dict[str, str]:
        return {a.url: _digest_of(f.text(f"{a.url}.sha256"), f"{a.url}.sha256") for a in assets}

    return Plan(assets, digests)


def _etcd(t: Target, arch: str, s: Sources) -> Plan:
    folder = f"etcd-{t.version}-linux-{arch}"
    asset = Asset("etcd", f"{s.etcd}/{t.version}/{folder}.tar.gz", member=f"{folder}/etcd")
    sums = f"{s.etcd}/{t.version}/SHA256SUMS"

    def digests(f: Fetcher) -> dict[str, str]:
        listed = parse_sha256sums(f.text(sums))
        if asset.file_name not in listed:
            raise Unavailable(f"{_host(sums)}: {asset.file_name} not listed in {sums}")
        return {asset.url: listed[asset.file_name]}

    return Plan((asset,), digests)


def _kwok(t: Target, arch: str, s: Sources) -> Plan:
    assets = tuple(Asset(b, f"{s.kwok}/{t.version}/{b}-linux-{arch}") for b in t.binaries)
    release = f"{s.kwok_release}/{t.version}"

    def digests(f: Fetcher) -> dict[str, str]:
        published = github_asset_digests(f.text(release), release)
        out = {}
        for a in assets:
            if a.file_name not in published:
                raise Unavailable(f"{_host(release)}: no SHA-256 published for {a.file_name}")
            out[a.url] = published[a.file_name]
        return out

    return Plan(assets, digests)


PLANS: dict[str, Callable[[Target, str, Sources], Plan]] = {
    "kubernetes": _kubernetes,
    "kubernetes-node": _kubernetes,
    "etcd": _etcd,
    "kwok": _kwok,
}
"""Components with official release binaries; any other component is always built."""


def _digest_of(text: str, url: str) -> str:
    """The digest of a one-file checksum (``<hex>`` or ``<hex>  <name>``)."""
    first = text.split()[0].lower() if text.split() else ""
    if not SHA256_HEX.match(first):
        raise Unavailable(f"{_host(url)}: {url} holds no SHA-256")
    return first


def parse_sha256sums(text: str) -> dict[str, str]:
    """File name → digest from ``sha256sum``/``shasum -a 256`` output (text or binary mode)."""
    out = {}
    for line in text.splitlines():
        parts = line.split(maxsplit=1)
        if len(parts) == 2 and SHA256_HEX.match(parts[0].lower()):
            out[parts[1].strip().lstrip("*")] = parts[0].lower()
    return out


def github_asset_digests(text: str, url: str) -> dict[str, str]:
    """Asset name → digest from a GitHub release document (assets without one are left out)."""
    try:
        assets = json.loads(text).get("assets", [])
        pairs = [(a["name"], a.get("digest") or "") for a in assets]
    except (ValueError, AttributeError, TypeError, KeyError) as err:
        raise Unavailable(f"{_host(url)}: {url} is not a GitHub release document") from err
    return {
        name: digest.removeprefix("sha256:").lower()
        for name, digest in pairs
        if digest.startswith("sha256:") and SHA256_HEX.match(digest.removeprefix("sha256:"))
    }


# -- choosing ------------------------------------------------------------------------------


def binaries_mode() -> str:
    """``MOCHAOS_BINARIES`` (default auto); UsageError for any other value."""
    raw = os.environ.get(MODE_ENV, "").strip()
    mode = raw.lower() or "auto"
    if mode not in MODES:
        raise UsageError(
            f"{MODE_ENV}={raw!r} is not one of {', '.join(MODES)}",
            hint="unset it (auto: download release binaries, build what cannot be had)",
        )
    return mode


def release_arch(machine: str | None = None) -> str:
    """The release arch of this machine (amd64, arm64); Unavailable on anything else."""
    system = platform.system()
    machine = machine or platform.machine()
    arch = ARCHES.get(machine.lower())
    if system != "Linux" or arch is None:
        raise Unavailable(f"no release binaries for {system}/{machine} (only Linux amd64, arm64)")
    return arch


def fingerprint(t: Target) -> str:
    """A downloaded component's stamp: component, version, recipe, platform (no Go version)."""
    machine = platform.machine().lower()
    raw = f"{t.name}@{t.version}/{RECIPE}/{sys.platform}-{ARCHES.get(machine, machine)}"
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


# -- HTTP ----------------------------------------------------------------------------------


class _Transient(Exception):
    """A failure another attempt may not meet: 5xx, 429, a reset, a stalled read."""


def _host(url: str) -> str:
    return urlsplit(url).netloc or url


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def _fmt(seconds: float) -> str:
    """Like the build's durations, with tenths under a minute (downloads are short)."""
    m, s = divmod(seconds, 60)
    return f"{int(m)}m{int(s):02d}s" if m else f"{s:.1f}s"


@dataclass
class Fetcher:
    """HTTP GETs with connect and read timeouts and a bounded retry of transient errors.

    A host that cannot be connected to (name not resolved, refused, connect timeout, TLS or
    proxy failure) is not retried and not tried again by this fetcher: an offline machine
    falls back to the build at once.
    """

    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    """Seconds without a byte before a read fails (not a limit on the whole download)."""
    attempts: int = 3
    backoff: float = 1.0
    """Seconds before the second attempt; doubles after each."""
    progress_every: float = 3.0
    unreachable: dict[str, str] = field(default_factory=dict)
    """host → why it could not be connected to."""
    _pools: dict[str | None, urllib3.PoolManager] = field(
        default_factory=dict, init=False, repr=False
    )

    def _pool(self, url: str) -> urllib3.PoolManager:
        """A direct pool, or one through the proxy the environment names for this URL."""
        parts = urlsplit(url)
        proxy = urllib.request.getproxies().get(parts.scheme)
        if proxy and urllib.request.proxy_bypass(parts.hostname or ""):
            proxy = None
        if proxy not in self._pools:
            self._pools[proxy] = urllib3.ProxyManager(proxy) if proxy else urllib3.PoolManager()
        return self._pools[proxy]

    @contextmanager
    def _get(self, url: str) -> Iterator[urllib3.BaseHTTPResponse]:
        """One GET (redirects followed); raises _Transient or Unavailable."""
        host = _host(url)
        if host in self.unreachable:
            raise Unavailable(f"{host}: {self.unreachable[host]}")
        try:
            resp = self._pool(url).request(
                "GET",
                url,
                preload_content=False,
                headers={"User-Agent": f"mo-chaos/{__version__}"},
                timeout=urllib3.Timeout(connect=self.connect_timeout, read=self.read_timeout),
                retries=urllib3.Retry(total=10, connect=0, read=0, status=0, other=0, redirect=10),
            )
        except MaxRetryError as err:
            raise self._classify(host, err.reason or err) from err
        except HTTPError as err:
            raise self._classify(host, err) from err
        try:
            if resp.status in (408, 429) or resp.status >= 500:
                raise _Transient(f"{host}: HTTP {resp.status} for {url}")
            if resp.status != 200:
                raise Unavailable(f"{host}: HTTP {resp.status} for {url}")
            yield resp
        finally:
            resp.release_conn()

    def _classify(self, host: str, err: BaseException) -> Exception:
        if isinstance(err, NameResolutionError):
            why = "name not resolved"
        elif isinstance(err, NewConnectionError):
            why = f"cannot connect ({_reason(err)})"
        elif isinstance(err, ConnectTimeoutError):
            why = f"no connection within {self.connect_timeout:g}s"
        elif isinstance(err, SSLError | ProxyError):
            why = f"{type(err).__name__}: {_reason(err)}"
        elif isinstance(err, ReadTimeoutError):
            return _Transient(f"{host}: no data for {self.read_timeout:g}s")
        elif isinstance(err, ProtocolError):
            return _Transient(f"{host}: connection broken ({_reason(err)})")
        else:
            return Unavailable(f"{host}: {_reason(err)}")
        self.unreachable[host] = why
        return Unavailable(f"{host}: {why}")

    def _retrying(self, what: Callable[[], T]) -> T:
        """``what()``, retried on _Transient up to ``attempts`` times; then Unavailable."""
        retrying = Retrying(
            retry=retry_if_exception_type(_Transient),
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.backoff, max=8 * self.backoff),
            reraise=True,
        )
        try:
            return retrying(what)
        except _Transient as err:
            raise Unavailable(f"{err} ({self.attempts} attempts)") from err

    def text(self, url: str) -> str:
        """A small text file (a checksum list, a release document)."""

        def once() -> str:
            with self._get(url) as resp:
                try:
                    body = resp.read(CHECKSUM_FILE_LIMIT, decode_content=True)
                except HTTPError as err:
                    raise self._classify(_host(url), err) from err
            return body.decode("utf-8", errors="replace")

        return self._retrying(once)

    def to_file(self, url: str, folder: Path, say: Callable[[int, int | None], None]) -> Download:
        """Stream ``url`` into a new private temporary file in ``folder``, hashing it.

        ``say(bytes_so_far, total_or_None)`` is called at most every ``progress_every``
        seconds. The caller owns (and removes) the returned file.
        """

        def once() -> Download:
            fd, name = tempfile.mkstemp(dir=folder, prefix=".download-")
            tmp = Path(name)
            try:
                with os.fdopen(fd, "wb") as out, self._get(url) as resp:
                    total = resp.headers.get("Content-Length")
                    size = int(total) if total and total.isdigit() else None
                    sha, done, last = hashlib.sha256(), 0, time.monotonic()
                    try:
                        for chunk in resp.stream(1 << 16, decode_content=False):
                            out.write(chunk)
                            sha.update(chunk)
                            done += len(chunk)
                            if time.monotonic() - last >= self.progress_every:
                                last = time.monotonic()
                                say(done, size)
                    except HTTPError as err:
                        raise self._classify(_host(url), err) from err
                return Download(tmp, sha.hexdigest(), done)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise

        return self._retrying(once)


def _reason(err: BaseException) -> str:
    """The innermost cause's message, on one line."""
    while err.__cause__ is not None or err.__context__ is not None:
        err = err.__cause__ or err.__context__  # type: ignore[assignment]
    text = str(err).strip() or type(err).__name__
    return " ".join(text.split())[:160]


@dataclass(frozen=True)
class Download:
    """A downloaded temporary file and its SHA-256."""

    path: Path
    sha256: str
    size: int


# -- installing ----------------------------------------------------------------------------


def _extract(archive: Path, member: str, folder: Path, url: str) -> Path:
    """Copy one regular file out of a .tar.gz into a new temporary file in ``folder``."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            try:
                info = tar.getmember(member)
            except KeyError:
                raise Unavailable(f"{_host(url)}: {url} has no {member}") from None
            src = tar.extractfile(info) if info.isfile() else None
            if src is None:
                raise Unavailable(f"{_host(url)}: {member} in {url} is not a regular file")
            fd, name = tempfile.mkstemp(dir=folder, prefix=".extract-")
            try:
                with src, os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
            except BaseException:
                Path(name).unlink(missing_ok=True)
                raise
            return Path(name)
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise Unavailable(f"{_host(url)}: {url} is not a readable .tar.gz ({err})") from err


def _install(tmp: Path, dest: Path) -> None:
    """Make a verified temporary file executable and move it into place atomically."""
    tmp.chmod(0o755)
    os.replace(tmp, dest)


def download_component(
    t: Target, *, arch: str, sources: Sources, fetcher: Fetcher, progress: Progress
) -> None:
    """Download, verify and install every binary of ``t``, then write its stamp."""
    plan = PLANS[t.name](t, arch, sources)
    progress(
        f"{t.name} {t.version}: release binaries from {_host(plan.assets[0].url)} (linux/{arch})"
    )
    t.directory.mkdir(parents=True, exist_ok=True)
    t.stamp.unlink(missing_ok=True)
    expected = plan.digests(fetcher)
    n = len(plan.assets)
    for i, asset in enumerate(plan.assets, 1):
        t0 = time.monotonic()
        tag = f"  [{i}/{n}] {asset.binary}"
        progress(f"{tag} {t.version} …")

        def say(done: int, total: int | None, tag: str = tag) -> None:
            share = f" of {_mb(total)} ({100 * done // total}%)" if total else ""
            progress(f"{tag}: {_mb(done)}{share}")

        got = fetcher.to_file(asset.url, t.directory, say)
        extracted: Path | None = None
        try:
            if got.sha256 != expected[asset.url]:
                raise ChecksumMismatch(
                    f"checksum mismatch for {asset.file_name} ({asset.url}): "
                    f"expected sha256 {expected[asset.url]}, got {got.sha256}",
                    hint="the file was discarded; check the source or mirror, "
                    f"or set {MODE_ENV}=build to build from Go modules",
                )
            if asset.member:
                extracted = _extract(got.path, asset.member, t.directory, asset.url)
            _install(extracted or got.path, t.path(asset.binary))
        finally:
            got.path.unlink(missing_ok=True)
            if extracted is not None:
                extracted.unlink(missing_ok=True)
        progress(
            f"{tag} downloaded in {_fmt(time.monotonic() - t0)} "
            f"({_mb(got.size)}, sha256 {got.sha256[:12]}… verified)"
        )
    t.stamp.write_text(f"{fingerprint(t)} {RECIPE}\n")


def _refused(err: Unavailable) -> Unavailable:
    return Unavailable(
        f"release binaries not available ({err.what})",
        hint=f"unset {MODE_ENV} to build from Go modules instead, or point "
        f"{', '.join(Sources.ENV.values())} at a mirror",
    )


def obtain(
    targets: Sequence[Target],
    *,
    build: Callable[[list[Target]], None],
    progress: Progress,
    mode: str | None = None,
    sources: Sources | None = None,
    fetcher: Fetcher | None = None,
) -> None:
    """Put every target into the cache: release binaries where ``mode`` allows, else ``build``.

    ``mode`` defaults to :func:`binaries_mode`. In ``auto`` a component whose release
    cannot be had is built (one line says why); in ``download`` that raises Unavailable. A
    checksum mismatch raises ChecksumMismatch in both. Components without official
    releases (not in :data:`PLANS`) are always built; ``build`` gets the components to
    build in the order given.
    """
    mode = binaries_mode() if mode is None else mode
    if mode not in MODES:
        raise UsageError(f"unknown binaries mode {mode!r}", hint=f"use one of {', '.join(MODES)}")
    wanted = [t for t in targets if t.name in PLANS] if mode != "build" else []
    failures: list[str] = []
    downloaded: list[Target] = []
    if wanted:
        sources = sources or Sources.from_env()
        fetcher = fetcher or Fetcher()
        started = time.monotonic()
        try:
            arch = release_arch()
        except Unavailable as err:
            if mode == "download":
                raise _refused(err) from err
            failures.append(err.what)
            wanted = []
        if wanted:
            names = ", ".join(f"{t.name} {t.version}" for t in wanted)
            progress(f"mo-chaos: downloading release binaries of {names} ({MODE_ENV}={mode})")
        for t in wanted:
            t0 = time.monotonic()
            try:
                download_component(
                    t, arch=arch, sources=sources, fetcher=fetcher, progress=progress
                )
            except Unavailable as err:
                if mode == "download":
                    raise _refused(err) from err
                failures.append(err.what)
                continue
            downloaded.append(t)
            progress(f"{t.name} {t.version} downloaded in {_fmt(time.monotonic() - t0)}")
        if downloaded:
            progress(f"mo-chaos: release binaries ready in {_fmt(time.monotonic() - started)}")
    rest = [t for t in targets if t not in downloaded]
    if failures:
        names = ", ".join(f"{t.name} {t.version}" for t in rest if t.name in PLANS)
        progress(
            f"mo-chaos: release binaries not available ({'; '.join(dict.fromkeys(failures))}); "
            f"building {names} from Go modules instead"
        )
    if rest:
        build(rest)
