"""Release artifacts of upstream packages, read statically: pip fetches them into a cache folder, nothing is
imported or installed, and files are read straight out of the wheel or sdist (or a git checkout folder).

Cache layout: ``<cache>/<package>-<version>/`` holds what ``pip download --no-deps`` saved, and
``<cache>/<package>-<version>/requires.json`` the Requires-Dist of that release (read from the wheel METADATA that
the index serves beside the wheel, PEP 658, through ``pip install --dry-run --report``: no wheel download). A
release already in the cache is never fetched again, so ``--offline`` rebuilds from the cache alone.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from email.parser import HeaderParser


class Offline(RuntimeError):
    """A release is not in the cache and fetching was not allowed."""


def default_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rlhf-lint", "upstream")


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, check=False)


def index_versions(package: str) -> list[str]:
    """Versions the index serves, newest first (``pip index versions``)."""
    out = _pip("index", "versions", package, "--disable-pip-version-check")
    m = re.search(r"Available versions:\s*(.*)", out.stdout)
    if not m:
        raise RuntimeError(f"pip index versions {package} failed: {out.stderr.strip()[-300:]}")
    return [v.strip() for v in m.group(1).split(",") if v.strip()]


class Release:
    """One release of one package: its files, read from the archive pip saved (or from a folder)."""

    def __init__(self, package: str, version: str, path: str, url: str):
        self.package, self.version, self.path, self.url = package, version, path, url
        self._names: list[str] | None = None

    def names(self) -> list[str]:
        """Paths inside the release, relative to the package root (an sdist's top folder is dropped)."""
        if self._names is None:
            self._names = sorted(self._members())
        return self._names

    def _members(self) -> dict[str, str]:
        if os.path.isdir(self.path):
            found = {}
            for root, dirs, files in os.walk(self.path):
                dirs[:] = [d for d in dirs if d not in (".git", "__pycache__", "node_modules")]
                for f in files:
                    full = os.path.join(root, f)
                    found[os.path.relpath(full, self.path).replace(os.sep, "/")] = full
            return found
        if self.path.endswith((".whl", ".zip")):
            with zipfile.ZipFile(self.path) as zf:  # a wheel's <name>.data/purelib/ folder is its root too
                return {re.sub(r"^[^/]+\.data/(?:purelib|platlib)/", "", n): n
                        for n in zf.namelist() if not n.endswith("/")}
        with tarfile.open(self.path) as tf:
            return {n.split("/", 1)[1]: n for n in tf.getnames() if "/" in n}

    def read(self, name: str) -> str:
        member = self._members_cached()[name]
        if os.path.isdir(self.path):
            with open(member, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        if self.path.endswith((".whl", ".zip")):
            with zipfile.ZipFile(self.path) as zf:
                return zf.read(member).decode("utf-8", "replace")
        with tarfile.open(self.path) as tf:
            fh = tf.extractfile(member)
            return fh.read().decode("utf-8", "replace") if fh else ""

    def _members_cached(self) -> dict[str, str]:
        if not hasattr(self, "_map"):
            self._map = self._members()
        return self._map

    def glob(self, pattern: str) -> list[str]:
        rx = re.compile(pattern)
        return [n for n in self.names() if rx.fullmatch(n)]

    def source(self, name: str) -> str:
        """Where a row read from ``name`` comes from: the release and the file."""
        return f"{self.package} {self.version} ({os.path.basename(self.path)}): {name}"


class Cache:
    def __init__(self, root: str | None = None, offline: bool = False, log=print):
        self.root = root or default_cache()
        self.offline = offline
        self.log = log

    def cached_versions(self, package: str) -> list[str]:
        """Versions of a package already in the cache (for --offline)."""
        if not os.path.isdir(self.root):
            return []
        prefix = f"{package}-"
        return [d[len(prefix):] for d in sorted(os.listdir(self.root))
                if d.startswith(prefix) and d[len(prefix):][:1].isdigit()]

    def folder(self, package: str, version: str) -> str:
        return os.path.join(self.root, f"{package}-{version}")

    def release(self, package: str, version: str, kind: str = "any") -> Release:
        """The release's archive (``kind``: "wheel", "sdist" or "any"), fetched with pip if the cache lacks it."""
        folder = self.folder(package, version)
        found = self._archive(folder, kind)
        if found is None:
            if self.offline:
                raise Offline(f"{package}=={version} is not in the cache {self.root} (run without --offline)")
            os.makedirs(folder, exist_ok=True)
            self.log(f"  fetching {package}=={version} ({kind})")
            args = ["download", "--no-deps", "-q", "--disable-pip-version-check", "-d", folder, f"{package}=={version}"]
            if kind == "wheel":
                args[1:1] = ["--only-binary", ":all:", "--ignore-requires-python"]
            elif kind == "sdist":  # pip prepares its metadata (setup.py egg_info) but installs nothing
                args[1:1] = ["--no-binary", ":all:"]
            out = _pip(*args)
            if out.returncode:
                raise RuntimeError(f"pip download {package}=={version}: {out.stderr.strip()[-400:]}")
            found = self._archive(folder, kind)
            if found is None:
                raise RuntimeError(f"pip saved no {kind} archive of {package}=={version} in {folder}")
        return Release(package, version, found, f"https://pypi.org/project/{package}/{version}/")

    @staticmethod
    def _archive(folder: str, kind: str) -> str | None:
        if not os.path.isdir(folder):
            return None
        ends = {"wheel": (".whl",), "sdist": (".tar.gz", ".zip"), "any": (".whl", ".tar.gz", ".zip")}[kind]
        files = sorted(f for f in os.listdir(folder) if f.endswith(ends))
        files.sort(key=lambda f: not f.endswith(".whl"))  # a wheel first: no build files to skip
        return os.path.join(folder, files[0]) if files else None

    def requires(self, package: str, version: str) -> dict:
        """{"requires_dist": [...], "url": wheel or sdist the metadata belongs to} of one release."""
        path = os.path.join(self.folder(package, version), "requires.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
        found = self._archive(self.folder(package, version), "any")
        if found is not None:  # an archive already here: read its metadata file, no network
            data = {"requires_dist": metadata_requires(Release(package, version, found, "")), "url": found}
        elif self.offline:
            raise Offline(f"no metadata of {package}=={version} in the cache {self.root}")
        else:
            self.log(f"  metadata {package}=={version}")
            report = os.path.join(self.root, f".report-{os.getpid()}.json")
            os.makedirs(self.root, exist_ok=True)
            out = _pip("install", "--dry-run", "--no-deps", "--ignore-installed", "--ignore-requires-python",
                       "--only-binary", ":all:", "-q", "--disable-pip-version-check", "--report", report,
                       f"{package}=={version}")
            if out.returncode:  # no wheel (DeepSpeed ships sdists only): the sdist's PKG-INFO
                sdist = self.release(package, version, "sdist")
                data = {"requires_dist": metadata_requires(sdist), "url": sdist.path}
            else:
                with open(report, encoding="utf-8") as fh:
                    item = json.load(fh)["install"][0]
                os.remove(report)
                data = {"requires_dist": item["metadata"].get("requires_dist", []),
                        "url": item["download_info"]["url"]}
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
        return data


def metadata_requires(release: Release) -> list[str]:
    """Requires-Dist of a wheel's ``*.dist-info/METADATA`` or an sdist's ``PKG-INFO`` (email header format)."""
    names = release.names()
    meta = [n for n in names if n.endswith(".dist-info/METADATA")] or [n for n in names if n == "PKG-INFO"]
    if not meta:
        return []
    headers = HeaderParser().parsestr(release.read(meta[0]))
    return [v.strip() for v in headers.get_all("Requires-Dist") or []]


def top_level_classes(text: str) -> list:
    """The class statements at the top of a Python file read as text (parsed, never run); none when it does not
    parse."""
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [node for node in tree.body if isinstance(node, ast.ClassDef)]


def git(gitdir: str, *args: str) -> str:
    """The output of a git command on the repository ``gitdir`` (a bare one, or a checkout's .git)."""
    out = subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip() or f"git {' '.join(args)} failed")
    return out.stdout


def newest_patches(versions: list[str], oldest: tuple[int, int]) -> list[str]:
    """The newest final release of each minor series from ``oldest`` on (pre-releases left out), oldest first."""
    from packaging.version import InvalidVersion, Version

    best: dict[tuple, Version] = {}
    for v in versions:
        try:
            parsed = Version(v)
        except InvalidVersion:
            continue
        if parsed.is_prerelease or parsed.release[:2] < oldest:
            continue
        key = parsed.release[:2]
        if key not in best or parsed > best[key]:
            best[key] = parsed
    return [str(v) for _, v in sorted(best.items())]
