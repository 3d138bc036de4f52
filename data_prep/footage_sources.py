"""Fetch real footage the project does not ship: sample clips inside Debian packages.

The table of packages and clips and the fetching are phyprobe.data.footage_sources (its docstring lists them)::

    python data_prep/footage_sources.py data/sources/debian-footage              # apt-get download, then unpack
    python data_prep/footage_sources.py data/sources/debian-footage --deb X.deb  # packages already on disk (repeat)
"""

import sys

from phyprobe.data.footage_sources import main

if __name__ == "__main__":
    sys.exit(main())
