#!/usr/bin/env bash
# mypy over the four packages under the names they import each other by (`oneply.engine…`).
#   bash tests/typecheck.sh [mypy args...]
# The repo's folders install as the `oneply` namespace package through an editable-install hook
# that mypy cannot follow, so `from oneply.engine.x import y` would type as Any and no type
# would be checked across modules. A throwaway folder holding one link, oneply -> this checkout,
# gives mypy the installed layout without copying anything.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
ln -s "$PWD" "$root/oneply"
MYPYPATH="$root" python3 -m mypy -p oneply.engine -p oneply.bot -p oneply.arena -p oneply.training "$@"
