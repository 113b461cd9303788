"""SVG line plots with no plotting library: the benchmark's (bench/report.py) and the studies' (scripts/). Every
text (titles, axis labels, series names and point labels) is escaped for XML (escape.xml_text)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from escape import xml_text as esc  # noqa: E402


def svg_lines(title, series, xlabel, ylabel, path, logx=True, logy=False, y_range=None):
    """series: list of (name, colour, [(x, y)]) or (name, colour, [(x, y)], dash) with an SVG dash pattern;
    y_range: (low, high) of the y axis (default: 0 to 1.1 x the largest y, or the data's span when logy)"""
    import math
    R = max(170, 40 + 7 * max(len(s[0]) for s in series))  # room for the legend's longest name
    W, H, L, T, Bm = 470 + R, 400, 70, 40, 50
    xs = [x for s in series for x, _ in s[2]]
    ys = [y for s in series for _, y in s[2]]
    if not xs:
        return
    fx = (lambda v: math.log2(v)) if logx else (lambda v: v)
    fy = (lambda v: math.log10(v)) if logy else (lambda v: v)
    x0, x1 = fx(min(xs)), fx(max(xs))
    y0, y1 = (fy(min(ys)), fy(max(ys))) if logy else (0.0, max(ys) * 1.1)
    if y_range:
        y0, y1 = fy(y_range[0]), fy(y_range[1])
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y1 = y0 + 1
    px = lambda v: L + (fx(v) - x0) / (x1 - x0) * (W - L - R)
    py = lambda v: H - Bm - (fy(v) - y0) / (y1 - y0) * (H - T - Bm)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="14">%s</text>' % (L, esc(title)),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - Bm, W - R, H - Bm),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - Bm),
           '<text x="%d" y="%d">%s</text>' % ((W - R + L) // 2 - 40, H - 12, esc(xlabel)),
           '<text x="14" y="%d" transform="rotate(-90 14 %d)">%s</text>' % (H // 2 + 60, H // 2 + 60, esc(ylabel))]
    for x in sorted(set(xs)):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (px(x), H - Bm + 16, x))
    for k in range(6):
        v = y0 + (y1 - y0) * k / 5
        val = 10 ** v if logy else v
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.3g</text>' % (L - 6, py(val) + 4, val))
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, py(val), W - R, py(val)))
    for i, (name, colour, pts, *dash) in enumerate(series):
        pts = sorted(pts)
        dash = ' stroke-dasharray="%s"' % dash[0] if dash else ""
        d = " ".join("%s%.1f,%.1f" % ("M" if j == 0 else "L", px(x), py(y)) for j, (x, y) in enumerate(pts))
        out.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (d, colour, dash))
        for x, y in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(x), py(y), colour))
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>'
                   % (W - R + 10, T + 20 * i, colour, W - R + 28, T + 20 * i + 11, esc(name)))
    out.append("</svg>")
    open(path, "w").write("\n".join(out))


def svg_pareto(title, series, xlabel, ylabel, path):
    """A scatter on a log x axis, lower and further left being better: series is a list of (name, colour,
    [(x, y, label)]); each point is labelled, each series' points are joined thinly in the order given, and the Pareto front over
    all points (none other both smaller in x and in y) is a dashed line."""
    import math
    R = max(150, 40 + 7 * max(len(s[0]) for s in series))
    W, H, L, T, Bm = 520 + R, 420, 70, 40, 50
    pts = [(x, y) for s in series for x, y, _ in s[2]]
    lx = [math.log10(x) for x, _ in pts]
    x0, x1 = math.floor(min(lx) - 0.05), math.ceil(max(lx) + 0.05)
    ys = [y for _, y in pts]
    pad = max(0.05, 0.08 * (max(ys) - min(ys)))
    y0, y1 = min(ys) - pad, max(ys) + pad
    px = lambda v: L + (math.log10(v) - x0) / (x1 - x0) * (W - L - R)
    py = lambda v: H - Bm - (v - y0) / (y1 - y0) * (H - T - Bm)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="14">%s</text>' % (L, esc(title)),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - Bm, W - R, H - Bm),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - Bm),
           '<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((W - R + L) // 2, H - 12, esc(xlabel)),
           '<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>' % (
               (H - Bm + T) // 2, (H - Bm + T) // 2, esc(ylabel))]
    marks = (1, 2, 5) if x1 - x0 <= 2 else (1,)  # decades, with 2x and 5x marks between when there is room
    for e in range(x0, x1 + 1):
        for m in marks:
            v = m * 10 ** e
            if math.log10(v) > x1 + 1e-9:
                break
            out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#%s"/>' % (px(v), T, px(v), H - Bm,
                                                                                  "ccc" if m == 1 else "eee"))
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (px(v), H - Bm + 16, v))
    for k in range(6):
        v = y0 + (y1 - y0) * k / 5
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.3g</text>' % (L - 6, py(v) + 4, v))
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, py(v), W - R, py(v)))
    front, best = [], math.inf
    for x, y in sorted(pts):
        if y < best:
            front.append((x, y))
            best = y
    d = " ".join("%s%.1f,%.1f" % ("M" if j == 0 else "L", px(x), py(y)) for j, (x, y) in enumerate(front))
    out.append('<path d="%s" fill="none" stroke="#555" stroke-width="1.5" stroke-dasharray="6,4"/>' % d)
    for i, (name, colour, sp) in enumerate(series):
        d = " ".join("%s%.1f,%.1f" % ("M" if j == 0 else "L", px(x), py(y)) for j, (x, y, _) in enumerate(sp))
        out.append('<path d="%s" fill="none" stroke="%s" stroke-width="1" opacity="0.5"/>' % (d, colour))
        for k, (x, y, label) in enumerate(sp):  # labels above and below in turn: close points stay readable
            out.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>' % (px(x), py(y), colour))
            out.append('<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>' % (px(x) + 6, py(y) + (14 if k % 2 else -5),
                                                                                 colour, esc(label)))
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>'
                   % (W - R + 10, T + 20 * i, colour, W - R + 28, T + 20 * i + 11, esc(name)))
    out.append('<path d="M%d,%d L%d,%d" stroke="#555" stroke-width="1.5" stroke-dasharray="6,4"/><text x="%d" y="%d">'
               'Pareto front</text>' % (W - R + 8, T + 20 * len(series) + 6, W - R + 22, T + 20 * len(series) + 6,
                                        W - R + 28, T + 20 * len(series) + 11))
    out.append("</svg>")
    open(path, "w").write("\n".join(out))
