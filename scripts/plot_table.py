"""The figures of the studies and the benchmark (scripts/, bench/), drawn by the one plotter, `grassflow plot
--table` (docs/plot.md): a script gives the rows, this writes them as the TSV that command reads and runs it.
The command is $GRASSFLOW (the shell scripts pass their build's), else build/grassflow of this checkout."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from escape import tsv_cell  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
COLUMNS = ("series", "group", "x", "y", "label", "dash", "colour")  # the table's columns, in this order


def grassflow():
    """The grassflow command that draws: $GRASSFLOW, else this checkout's build/grassflow."""
    gf = os.environ.get("GRASSFLOW") or os.path.join(ROOT, "build", "grassflow")
    if not os.access(gf, os.X_OK):
        raise SystemExit("plot_table: %s is missing: build it (make) or set GRASSFLOW to a grassflow command" % gf)
    return gf


def cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)  # the shortest text that reads back as v
    return tsv_cell(str(v))


def plot(out, rows, kind="lines", title=None, xlabel=None, ylabel=None, logx=False, logy=False, ymin=None,
         ymax=None, front=False):
    """Draw rows (dicts whose keys are among COLUMNS: series, x and y; group and y for bars; label, dash and
    colour as they apply) into the SVG out, replacing it; SystemExit if grassflow refuses them."""
    cols = [c for c in COLUMNS if any(c in r for r in rows)]
    fd, tsv = tempfile.mkstemp(prefix="grassflow-plot-", suffix=".tsv")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write("\t".join(cols) + "\n")
            f.writelines("\t".join(cell(r.get(c)) for c in cols) + "\n" for r in rows)
        cmd = [grassflow(), "plot", "--table", tsv, "--out", out, "--kind", kind]
        for flag, value in (("--title", title), ("--xlabel", xlabel), ("--ylabel", ylabel), ("--ymin", ymin),
                            ("--ymax", ymax)):
            cmd += [flag, str(value)] if value is not None else []
        cmd += [flag for flag, on in (("--logx", logx), ("--logy", logy), ("--front", front)) if on]
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL)  # its "wrote ..." line is not the script's output
        if r.returncode:
            raise SystemExit("plot_table: grassflow plot --table failed (exit %d) drawing %s (above)" % (r.returncode, out))
    finally:
        os.unlink(tsv)
