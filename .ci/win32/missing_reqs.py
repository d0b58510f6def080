"""Run under the *Windows* Python: print requirements of installed distributions
that are not satisfied, one per line (evaluated with this interpreter's markers,
so Windows-only dependencies such as colorama are found even though the wheels
were downloaded by a Linux pip). Extra requirement strings can be passed as args.
Exit 0 always; empty output means the environment is complete.
"""

import sys
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

installed = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        installed[canonicalize_name(name)] = dist

wanted = [Requirement(r) for r in sys.argv[1:]]
for dist in installed.values():
    for r in dist.requires or ():
        wanted.append(Requirement(r))

missing = set()
for req in wanted:
    # Extras of the depending package are not requested: only plain markers.
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    dist = installed.get(canonicalize_name(req.name))
    ok = dist is not None and (
        not req.specifier or req.specifier.contains(dist.version, prereleases=True)
    )
    if not ok:
        missing.add(str(req.name) + str(req.specifier))
for m in sorted(missing):
    print(m)
