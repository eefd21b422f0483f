#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what the tests need, then lints and tests.
#   bash tests/run.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages: Stockfish (tests play against it), opening books and ECO lines (positions).
need=()
[ -x /usr/games/stockfish ] || command -v stockfish >/dev/null || need+=(stockfish)
[ -f /usr/share/games/gnuchess/book.bin ] || need+=(gnuchess-book)
[ -f /usr/share/pgn-extract/eco.pgn ] || need+=(pgn-extract)
if [ ${#need[@]} -gt 0 ]; then
  echo "run.sh: installing ${need[*]} system-wide with apt" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

# Podman builds and runs the Docker image (tests/bot/test_docker.py; debootstrap makes its stand-in
# base image). Optional: without them those tests skip and say why.
if ! command -v podman >/dev/null || ! command -v debootstrap >/dev/null; then
  echo "run.sh: installing podman, runc, fuse-overlayfs, slirp4netns, uidmap and debootstrap" \
    "system-wide with apt (for tests/bot/test_docker.py)" >&2
  { as_root apt-get update -qq \
    && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      podman runc fuse-overlayfs slirp4netns uidmap debootstrap; } \
    || echo "run.sh: podman/debootstrap not installed; the Docker image tests will skip" >&2
fi

# Python packages: the engine, plus the CPU build of torch (pinned: an unpinned torch pulls CUDA).
# They go where `python3` is: the Quickstart's .venv when it is active (as in .ci/run). The
# install is editable, so only the package's declaration and the C sources (built by setup.py)
# ask for another: a stamp in the environment records them, and a rerun with nothing changed
# skips pip (a fresh environment, as CI's, has no stamp and installs).
prefix=$(python3 -c 'import sys; print(sys.prefix)')
stamp="$prefix/.oneply-test-install"
inputs=$({ cat pyproject.toml setup.py; find engine/csrc -type f | sort | xargs cat; } 2>/dev/null | sha256sum)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$PWD $inputs" ]; then
  echo "run.sh: oneply[test] already installed into $prefix (nothing changed since)" >&2
else
  echo "run.sh: installing oneply[test] into $prefix" >&2
  rm -f "$stamp"
  python3 -m pip install -q -e ".[test]"
  echo "$PWD $inputs" > "$stamp"
fi

# Syzygy 3-4-piece tables (adjudication tests) ship in python-chess's source distribution.
if [ -z "${ONEPLY_SYZYGY:-}" ]; then
  export ONEPLY_SYZYGY="$PWD/.cache/syzygy"
  if [ ! -f "$ONEPLY_SYZYGY/KQvK.rtbw" ]; then
    version=$(python3 -c "import chess; print(chess.__version__)")
    tmp=$(mktemp -d)
    python3 -m pip download -q --no-binary :all: --no-deps "chess==$version" -d "$tmp"
    mkdir -p "$ONEPLY_SYZYGY"
    tar xzf "$tmp"/chess-*.tar.gz -C "$tmp" --wildcards "*/data/syzygy/regular/*"
    cp "$tmp"/chess-*/data/syzygy/regular/*.rtb? "$ONEPLY_SYZYGY"/
    rm -rf "$tmp"
  fi
fi

python3 -m ruff check .
python3 -m ruff format --check .
bash tests/typecheck.sh
# Two passes: everything but the tests that time themselves on two workers (pytest-xdist, a
# test file per worker so module fixtures are built once), then those alone (tests/tiers.py
# SERIAL). ONEPLY_TEST_WORKERS=1 runs it all in one process, as plain `pytest` does.
workers=${ONEPLY_TEST_WORKERS:-2}
if [ "$workers" -le 1 ]; then
  exec python3 -m pytest -q "$@"
fi
status=0
for pass in "-n $workers --dist loadfile --serial skip" "--serial only"; do
  code=0
  # shellcheck disable=SC2086  # $pass is several options
  python3 -m pytest -q $pass "$@" || code=$?
  [ "$code" -eq 5 ] && code=0  # 5: the arguments left this pass no test
  [ "$status" -ne 0 ] || status=$code
done
exit "$status"
