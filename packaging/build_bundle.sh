#!/usr/bin/env bash
# Build the one-folder desktop bundle with PyInstaller and smoke-test it. Beside the program,
# dist/swimlanes/share/ holds the desktop entry, AppStream metainfo and icon as under an install
# prefix (swimlanes.spec puts them there; the smoke test checks them).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
"$PY" -m pip install -q "pyinstaller>=6.10"
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath dist --workpath build/pyinstaller packaging/swimlanes.spec
bash packaging/smoke_test.sh dist/swimlanes/swimlanes
