#!/usr/bin/env bash
# Run a built `swimlanes` executable: --version, and a headless export of an example.
set -euo pipefail
exe=${1:?usage: smoke_test.sh PATH/TO/swimlanes}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$exe" --version
# The desktop entry, metainfo and icon ride along under the bundle's share/.
bundle=$(dirname "$exe")
for f in applications/io.github.swimlanes.Swimlanes.desktop \
         metainfo/io.github.swimlanes.Swimlanes.metainfo.xml \
         icons/hicolor/scalable/apps/io.github.swimlanes.Swimlanes.svg; do
    test -f "$bundle/share/$f" || { echo "missing from the bundle: share/$f" >&2; exit 1; }
done
"$exe" schema pipeline > "$out/pipeline.schema.json"
"$exe" examples > "$out/examples.txt"
"$exe" examples two-streams -o "$out/two-streams.json"
QT_QPA_PLATFORM=offscreen "$exe" export "$out/two-streams.json" -o "$out/two-streams.png" --width 800
QT_QPA_PLATFORM=offscreen "$exe" export "$out/two-streams.json" -o "$out/two-streams.trace.json"
python3 - "$out/two-streams.png" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width = struct.unpack(">I", data[16:20])[0]
assert width >= 800, width
print(f"bundle smoke test: PNG {width} px wide, {len(data)} bytes")
PY
echo "bundle smoke test passed"
