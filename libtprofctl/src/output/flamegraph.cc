#include "tprof/output/flamegraph.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <string_view>
#include <vector>

#include "base/text_format.h"

namespace tprof {

namespace {

using text::Appendf;

constexpr int kPad = 10;          // left and right margins
constexpr int kFrameHeight = 16;  // per stack level
constexpr int kTop = 60;          // title, subtitle, controls
constexpr int kBottom = 30;       // the details line
constexpr double kCharWidth = 7.5;  // 12px monospace, rounded up

// One frame of the merged stacks: children by name, so siblings sort.
struct Node {
  std::string name;
  uint64_t samples = 0;
  int depth = 0;
  std::map<std::string, size_t> children;  // name -> index in the node list
};

// Appends one UTF-8 code point.
void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xc0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xe0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    *out += static_cast<char>(0xf0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

constexpr uint32_t kReplacement = 0xfffd;

// Decodes the code point at s[*pos] and steps past it; malformed UTF-8
// (bad lead or continuation bytes, overlong forms, surrogates, > U+10FFFF)
// is one byte read as U+FFFD.
uint32_t NextCodePoint(std::string_view s, size_t* pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = byte(*pos);
  size_t len = 0;
  uint32_t cp = 0, min = 0;
  if (c < 0x80) {
    ++*pos;
    return c;
  } else if ((c & 0xe0) == 0xc0) {
    len = 2, cp = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    len = 3, cp = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    ++*pos;
    return kReplacement;
  }
  if (*pos + len > s.size()) {
    ++*pos;
    return kReplacement;
  }
  for (size_t i = 1; i < len; ++i) {
    if ((byte(*pos + i) & 0xc0) != 0x80) {
      ++*pos;
      return kReplacement;
    }
    cp = (cp << 6) | (byte(*pos + i) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
    ++*pos;
    return kReplacement;
  }
  *pos += len;
  return cp;
}

// Text as XML character data or an attribute value: markup characters as
// entities, and what XML 1.0 cannot hold (control characters, U+FFFE/FFFF,
// bytes that are not UTF-8) as U+FFFD.
std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    uint32_t cp = NextCodePoint(s, &pos);
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((cp < 0x20 && cp != '\t') || cp == 0xfffe || cp == 0xffff) cp = kReplacement;
        AppendUtf8(cp, &out);
    }
  }
  return out;
}

// The label that fits a frame `width` pixels wide: the name, cut with ".."
// when too long, none below 3 characters (the script does the same after a
// zoom).
std::string Label(std::string_view name, double width) {
  const auto fits = static_cast<long>((width - 6) / kCharWidth);
  if (fits < 3) return "";
  std::vector<size_t> starts;  // of each code point
  for (size_t pos = 0; pos < name.size();) {
    starts.push_back(pos);
    NextCodePoint(name, &pos);
  }
  if (starts.size() <= static_cast<size_t>(fits)) return std::string(name);
  return std::string(name.substr(0, starts[static_cast<size_t>(fits) - 2])) + "..";
}

uint32_t Hash(std::string_view s) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// Warm colours for code, orange for the kernel, blue-grey for the root and
// the processes; the name picks the shade, so a function keeps its colour.
std::string Fill(const Node& n) {
  const uint32_t h = Hash(n.name);
  const double v1 = (h & 0xff) / 255.0, v2 = ((h >> 8) & 0xff) / 255.0,
               v3 = ((h >> 16) & 0xff) / 255.0;
  int r, g, b;
  if (n.depth <= 1) {
    r = 170 + static_cast<int>(30 * v1), g = 185 + static_cast<int>(30 * v1), b = 225;
  } else if (n.name.ends_with("_[k]")) {
    r = 225 + static_cast<int>(30 * v1), g = 120 + static_cast<int>(70 * v2),
    b = static_cast<int>(40 * v3);
  } else {
    r = 205 + static_cast<int>(50 * v3), g = static_cast<int>(230 * v1),
    b = static_cast<int>(55 * v2);
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "rgb(%d,%d,%d)", r, g, b);
  return buf;
}

constexpr std::string_view kStyle = R"(
text { font-family: monospace; font-size: 12px; fill: rgb(0,0,0); }
#title { font-size: 17px; }
#subtitle { fill: rgb(90,90,90); }
.control { cursor: pointer; fill: rgb(0,0,160); }
.control:hover { text-decoration: underline; }
.hidden { opacity: 0; pointer-events: none; }
g.f { cursor: pointer; }
g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }
g.f text { pointer-events: none; }
g.faded { opacity: 0.5; }
)";

// Zoom, search and details. FG_* are set by the generator before this.
constexpr std::string_view kScript = R"(
(function () {
  var frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));
  var details = document.getElementById('details');
  var matched = document.getElementById('matched');
  var unzoom = document.getElementById('unzoom');
  var searchButton = document.getElementById('search');
  var GW = FG_WIDTH - 2 * FG_PAD;
  var searching = false;
  function num(g, a) { return Number(g.getAttribute(a)); }
  function nameOf(g) {
    var t = g.querySelector('title').textContent;
    return t.substring(0, t.lastIndexOf(' ('));
  }
  function fit(name, w) {
    var n = Math.floor((w - 6) / FG_CHAR);
    if (n < 3) return '';
    var cps = Array.from(name);
    return cps.length <= n ? name : cps.slice(0, n - 2).join('') + '..';
  }
  function place(g, x, w) {
    var r = g.querySelector('rect'), t = g.querySelector('text');
    r.setAttribute('x', x.toFixed(2));
    r.setAttribute('width', w.toFixed(2));
    t.setAttribute('x', (x + 3).toFixed(2));
    t.textContent = fit(nameOf(g), w);
    g.style.display = '';
  }
  // Shows the frames inside [x0, x0 + s0) samples at depth >= d0 across the
  // whole width, the ones below that hold it full width (faded).
  function zoom(x0, s0, d0) {
    frames.forEach(function (g) {
      var x = num(g, 'data-x'), s = num(g, 'data-s'), d = num(g, 'data-d');
      g.classList.remove('faded');
      if (d < d0 && x <= x0 && x + s >= x0 + s0) {
        place(g, FG_PAD, GW);
        g.classList.add('faded');
      } else if (d >= d0 && x >= x0 && x + s <= x0 + s0 && s / s0 * GW >= FG_MIN) {
        place(g, FG_PAD + (x - x0) / s0 * GW, s / s0 * GW);
      } else {
        g.style.display = 'none';
      }
    });
    if (d0 > 0) unzoom.classList.remove('hidden'); else unzoom.classList.add('hidden');
  }
  function resetZoom() { zoom(0, FG_TOTAL, 0); }
  function clearSearch() {
    frames.forEach(function (g) {
      var r = g.querySelector('rect');
      if (r.hasAttribute('data-fill')) {
        r.setAttribute('fill', r.getAttribute('data-fill'));
        r.removeAttribute('data-fill');
      }
    });
    matched.textContent = ' ';
    searchButton.textContent = 'Search';
    searching = false;
  }
  function search(term) {
    clearSearch();
    var re;
    try { re = new RegExp(term); } catch (e) { matched.textContent = 'bad expression'; return; }
    var hits = [];
    frames.forEach(function (g) {
      if (!re.test(nameOf(g))) return;
      var r = g.querySelector('rect');
      r.setAttribute('data-fill', r.getAttribute('fill'));
      r.setAttribute('fill', 'rgb(230,0,230)');
      hits.push([num(g, 'data-x'), num(g, 'data-s')]);
    });
    // Frames nest: count each sample once (the outermost match).
    hits.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var sum = 0, end = 0;
    hits.forEach(function (h) {
      if (h[0] >= end) { sum += h[1]; end = h[0] + h[1]; }
    });
    matched.textContent = 'Matched: ' + (100 * sum / FG_TOTAL).toFixed(1) + '%';
    searchButton.textContent = 'Reset Search';
    searching = true;
  }
  function askSearch() {
    if (searching) { clearSearch(); return; }
    var term = window.prompt('Search for (regular expression):', '');
    if (term) search(term);
  }
  frames.forEach(function (g) {
    g.addEventListener('mouseover', function () {
      details.textContent = g.querySelector('title').textContent;
    });
    g.addEventListener('mouseout', function () { details.textContent = ' '; });
    g.addEventListener('click', function () {
      if (num(g, 'data-d') === 0) resetZoom();
      else zoom(num(g, 'data-x'), num(g, 'data-s'), num(g, 'data-d'));
    });
  });
  unzoom.addEventListener('click', resetZoom);
  searchButton.addEventListener('click', askSearch);
  window.addEventListener('keydown', function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); askSearch(); }
    else if (e.key === 'Escape') { resetZoom(); clearSearch(); }
  });
  var preset = /[?&]s=([^&]*)/.exec(window.location.search);
  if (preset) search(decodeURIComponent(preset[1].replace(/\+/g, ' ')));
})();
)";

}  // namespace

std::string RenderFlameGraph(const std::vector<StackRow>& stacks,
                             const FlameGraphOptions& options) {
  // Merge the rows into a tree under "all".
  std::vector<Node> nodes(1);
  nodes[0].name = "all";
  int max_depth = 0;
  for (const StackRow& row : stacks) {
    if (row.frames.empty() || row.samples == 0) continue;
    size_t at = 0;
    nodes[0].samples += row.samples;
    for (const std::string& frame : row.frames) {
      auto [it, added] = nodes[at].children.try_emplace(frame, nodes.size());
      const size_t child = it->second;
      if (added) {
        Node n;
        n.name = frame;
        n.depth = nodes[at].depth + 1;
        max_depth = std::max(max_depth, n.depth);
        nodes.push_back(std::move(n));  // may move nodes[at]: index, not reference
      }
      nodes[child].samples += row.samples;
      at = child;
    }
  }
  const uint64_t total = nodes[0].samples;
  const int width = std::max(options.width, 4 * kPad);
  const double graph_width = width - 2 * kPad;
  const int height = kTop + (max_depth + 1) * kFrameHeight + kBottom;

  std::string out;
  out.reserve(4096 + nodes.size() * 256);
  Appendf(&out,
          "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
          "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\">\n",
          width, height, width, height);
  out += "<style type=\"text/css\"><![CDATA[";
  out += kStyle;
  out += "]]></style>\n";
  Appendf(&out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(250,250,246)\"/>\n",
          width, height);
  Appendf(&out, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">%s</text>\n",
          width / 2, XmlEscape(options.title).c_str());
  if (!options.subtitle.empty())
    Appendf(&out, "<text id=\"subtitle\" x=\"%d\" y=\"44\" text-anchor=\"middle\">%s</text>\n",
            width / 2, XmlEscape(options.subtitle).c_str());
  Appendf(&out,
          "<text id=\"unzoom\" class=\"control hidden\" x=\"%d\" y=\"24\">Reset Zoom</text>\n",
          kPad);
  Appendf(&out,
          "<text id=\"search\" class=\"control\" x=\"%d\" y=\"24\" "
          "text-anchor=\"end\">Search</text>\n",
          width - kPad);
  Appendf(&out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", kPad, height - 10);
  Appendf(&out, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
          width - kPad, height - 10);
  if (total == 0)
    Appendf(&out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no samples</text>\n", width / 2,
            height / 2);

  // Depth first, children in name order: a frame starts where its previous
  // sibling ends, in samples (data-x), and is data-s samples wide.
  out += "<g id=\"frames\">\n";
  struct Visit {
    size_t node;
    uint64_t offset;
  };
  std::vector<Visit> todo;
  if (total) todo.push_back({0, 0});
  while (!todo.empty()) {
    const Visit v = todo.back();
    todo.pop_back();
    const Node& n = nodes[v.node];
    const double w = static_cast<double>(n.samples) / static_cast<double>(total) * graph_width;
    if (w < options.min_frame_width) continue;  // and its callees, narrower still
    const double x =
        kPad + static_cast<double>(v.offset) / static_cast<double>(total) * graph_width;
    const int y = height - kBottom - (n.depth + 1) * kFrameHeight;
    const std::string name = XmlEscape(n.name);
    Appendf(&out,
            "<g class=\"f\" data-x=\"%" PRIu64 "\" data-s=\"%" PRIu64
            "\" data-d=\"%d\"><title>%s (%" PRIu64 " samples, %.2f%%)</title>"
            "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"%s\"/>"
            "<text x=\"%.2f\" y=\"%d\">%s</text></g>\n",
            v.offset, n.samples, n.depth, name.c_str(), n.samples,
            100.0 * static_cast<double>(n.samples) / static_cast<double>(total), x, y, w,
            kFrameHeight - 1, Fill(n).c_str(), x + 3, y + 11, XmlEscape(Label(n.name, w)).c_str());
    // Pushed in reverse so the first child (by name) comes out first.
    uint64_t end = v.offset + n.samples;
    for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) {
      end -= nodes[it->second].samples;
      todo.push_back({it->second, end});
    }
  }
  out += "</g>\n";
  Appendf(&out,
          "<script type=\"text/ecmascript\"><![CDATA[\nvar FG_WIDTH = %d, FG_PAD = %d, FG_TOTAL = "
          "%" PRIu64 ", FG_CHAR = %.1f, FG_MIN = %.3f;",
          width, kPad, total, kCharWidth, options.min_frame_width);
  out += kScript;
  out += "]]></script>\n</svg>\n";
  return out;
}

}  // namespace tprof
