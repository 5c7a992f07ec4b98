#!/usr/bin/env bash
# The flame graph in a real browser: `tprofctl dump --format svg` of a
# small synthetic profile, rendered by Debian's headless Chromium into a
# PNG, which must show the frames; a second render with ?s=REGEX must show
# the search's highlight, so the embedded script ran; a page that frames the
# SVG clicks, hovers and resets in it and reports what the script did.
# Takes seconds, needs
# no display (root or not). Prints PASS:/FAIL: lines; tests/check.sh counts
# them. Usage: tests/flamegraph_browser.sh [TPROFCTL] (default
# build/bin/tprofctl).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TPROFCTL=${1:-$ROOT/build/bin/tprofctl}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {
	local name=$1
	shift
	if "$@"; then echo "PASS: $name"; else echo "FAIL: $name"; fi
}

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
	echo "FAIL: headless Chromium: not installed (make deps)"
	exit 1
fi

# app: 40 samples in compute (30 of them from entry_SYSCALL_64), 6 in
# do_syscall_64; worker: 25; idle: 15. compute's name needs escaping.
printf 'tprof-profile 1 0\n' >"$tmp/tprof.data"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
	process 100 0 0 '' '' '' name 100 0 0 0 app '' \
	process 200 0 0 '' '' '' name 200 0 0 0 worker '' \
	sample 100 1 ffffffff81000110 0 6 '' sample 100 1 ffffffff81000210 0 40 '' \
	edge 100 1 ffffffff81000210 0 ffffffff81000025 30 \
	sample 200 2 ffffffff81000110 0 25 '' sample 0 0 ffffffff81000310 2 15 '' |
	sed 's/\t*$//' >>"$tmp/tprof.data"
printf 'kernel-symbols\t1\t\n' >>"$tmp/tprof.data"
printf 'ksym\t%s\t%s\t%s\t\n' ffffffff81000000 T entry_SYSCALL_64 ffffffff81000100 t do_syscall_64 \
	ffffffff81000200 t 'compute<a>&"b"' ffffffff81000300 T default_idle ffffffff81000400 T next \
	>>"$tmp/tprof.data"
printf 'end\n' >>"$tmp/tprof.data"

if ! "$TPROFCTL" dump -i "$tmp/tprof.data" --format svg -o "$tmp/flame.svg" 2>"$tmp/dump.err"; then
	echo "FAIL: tprofctl dump --format svg: $(cat "$tmp/dump.err")"
	exit 1
fi
echo "PASS: tprofctl dump --format svg wrote $(wc -c <"$tmp/flame.svg") bytes"

# Renders $1 (a URL) into $2; Chromium's own noise (no D-Bus) goes to a log.
shoot() {
	timeout 60 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$tmp/profile" --window-size=1200,600 --screenshot="$2" "$1" \
		>>"$tmp/chromium.log" 2>&1 && [ -s "$2" ]
}
check "Chromium renders the flame graph" shoot "file://$tmp/flame.svg" "$tmp/plain.png"
check "Chromium renders it searched (?s=compute)" shoot "file://$tmp/flame.svg?s=compute" "$tmp/search.png"

# Counts pixel colours of a PNG with the standard library only (zlib and
# the five PNG filters): frames must be there, and the search's magenta
# (rgb(230,0,230)) only in the searched picture.
pixels() {
	python3 - "$1" "$2" <<'PY'
import struct, sys, zlib
path, want = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, hdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        hdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = hdr
assert depth == 8 and ctype in (2, 6) and interlace == 0, "unexpected PNG layout %r" % (hdr,)
bpp = 4 if ctype == 6 else 3
raw, stride = zlib.decompress(idat), w * bpp
prev, colours, magenta, warm, bluegrey = bytearray(stride), {}, 0, 0, 0
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        r, g, bl = line[x], line[x + 1], line[x + 2]
        colours[(r, g, bl)] = colours.get((r, g, bl), 0) + 1
        if abs(r - 230) < 8 and g < 20 and abs(bl - 230) < 8: magenta += 1
        elif r > 200 and bl < 70 and r - bl > 150: warm += 1
        elif bl > 200 and r < 210 and bl - r > 15: bluegrey += 1
    prev = line
total = w * h
print("%dx%d, %d colours, %d warm, %d blue-grey, %d magenta pixels" % (w, h, len(colours), warm, bluegrey, magenta))
ok = len(colours) >= 8 and warm > total // 100 and bluegrey > total // 100
ok = ok and (magenta > total // 200 if want == "search" else magenta == 0)
sys.exit(0 if ok else 1)
PY
}
check "the picture shows the frames, unsearched" pixels "$tmp/plain.png" plain
check "the search painted the matching frames (the script ran)" pixels "$tmp/search.png" search

# Zoom, hover and reset, driven from a page that frames the SVG (file://
# pages may reach each other only with --allow-file-access-from-files).
# The page writes PASS:/FAIL: lines into its DOM, which --dump-dom prints.
cat >"$tmp/drive.html" <<'HTML'
<!DOCTYPE html><html><body><pre id="out">FAIL: the SVG never loaded in its frame</pre>
<iframe id="f" src="flame.svg" width="1200" height="300"></iframe>
<script>
document.getElementById('f').addEventListener('load', function () {
  var d = document.getElementById('f').contentDocument, out = [];
  var gs = Array.prototype.slice.call(d.querySelectorAll('g.f'));
  function frame(name) {
    return gs.filter(function (g) {
      return g.querySelector('title').textContent.indexOf(name + ' (') === 0;
    })[0];
  }
  function width(g) { return Number(g.querySelector('rect').getAttribute('width')); }
  function shown(g) { return g.style.display !== 'none'; }
  function check(what, ok) { out.push((ok ? 'PASS: ' : 'FAIL: ') + what); }
  function click(el) { el.dispatchEvent(new MouseEvent('click', {bubbles: true})); }
  var entry = frame('entry_SYSCALL_64_[k]'), app = frame('app'), idle = frame('idle');
  var unzoom = d.getElementById('unzoom');
  check('the framed SVG has its 10 frames', gs.length === 10 && entry && app && idle);
  click(entry);
  check('a click zooms the frame to the full width', Math.abs(width(entry) - 1180) < 0.5);
  check('its callers stay, full width and faded',
        shown(app) && Math.abs(width(app) - 1180) < 0.5 && app.classList.contains('faded'));
  check('frames outside it are hidden', !shown(idle));
  check('"Reset Zoom" appears', !unzoom.classList.contains('hidden'));
  app.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
  check('hovering shows name, samples and share',
        d.getElementById('details').textContent === 'app (46 samples, 53.49%)');
  click(unzoom);
  check('"Reset Zoom" shows every frame again at its width',
        gs.every(shown) && Math.abs(width(idle) - 15 / 86 * 1180) < 0.5 &&
        unzoom.classList.contains('hidden'));
  document.getElementById('out').textContent = out.join('\n');
});
</script></body></html>
HTML
timeout 60 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
	--user-data-dir="$tmp/profile" --allow-file-access-from-files --virtual-time-budget=5000 \
	--dump-dom "file://$tmp/drive.html" 2>>"$tmp/chromium.log" >"$tmp/drive.dom"
# Only the <pre>'s lines: the DOM holds the page's script text too.
sed -n '/<pre id="out">/,/<\/pre>/p' "$tmp/drive.dom" | sed 's/<[^>]*>//g' >"$tmp/drive.out"
if grep -q '^PASS: \|^FAIL: ' "$tmp/drive.out"; then
	grep '^PASS: \|^FAIL: ' "$tmp/drive.out"
else
	echo "FAIL: zoom, hover and reset: Chromium printed no result (see its DOM: $(head -c 300 "$tmp/drive.dom"))"
fi
