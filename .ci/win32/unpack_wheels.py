"""Unpack wheels into a flat site-packages folder (host side, any Python 3).

Usage: unpack_wheels.py SITE_DIR WHEEL...

A wheel is a zip file; for pure-Python and platform wheels alike, unzipping it into
site-packages is what an installer does, except for the ``*.data/`` folder (scripts,
headers, purelib/platlib), which we map by hand: purelib/platlib go into site-packages,
the rest is dropped (no console scripts are needed: the lane runs ``python -m pytest``).
Already-unpacked wheels (marker file per wheel name) are skipped, so reruns are cheap.
"""

import os
import shutil
import sys
import zipfile


def unpack(site, wheel):
    marker = os.path.join(site, ".unpacked", os.path.basename(wheel))
    if os.path.exists(marker):
        return False
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            name = info.filename
            if name.endswith("/"):
                continue
            parts = name.split("/")
            if parts[0].endswith(".data"):
                if len(parts) > 2 and parts[1] in ("purelib", "platlib"):
                    parts = parts[2:]
                else:
                    continue
            dest = os.path.join(site, *parts)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with zf.open(info) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out)
    os.makedirs(os.path.dirname(marker), exist_ok=True)
    open(marker, "w").close()
    return True


def main(argv):
    site = argv[1]
    os.makedirs(site, exist_ok=True)
    done = [w for w in argv[2:] if unpack(site, w)]
    for w in done:
        print("  unpacked", os.path.basename(w))


if __name__ == "__main__":
    main(sys.argv)
