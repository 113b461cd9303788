"""SVG line plots with no plotting library: the benchmark's (bench/report.py) and the studies' (scripts/)."""


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
           '<text x="%d" y="22" font-size="14">%s</text>' % (L, title),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - Bm, W - R, H - Bm),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - Bm),
           '<text x="%d" y="%d">%s</text>' % ((W - R + L) // 2 - 40, H - 12, xlabel),
           '<text x="14" y="%d" transform="rotate(-90 14 %d)">%s</text>' % (H // 2 + 60, H // 2 + 60, ylabel)]
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
                   % (W - R + 10, T + 20 * i, colour, W - R + 28, T + 20 * i + 11, name))
    out.append("</svg>")
    open(path, "w").write("\n".join(out))
