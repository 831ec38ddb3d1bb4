"""Run the AWS Architecture Blog's backoff simulator over a sweep of clients.

The simulator is one public file, src/backoff_simulator.py of the
repository aws-samples/aws-arch-backoff-simulator (Marc Brooker, 2015). It
carries no licence file, so herdlab does not ship it: fetch it yourself
and pass its path. Its source runs unmodified but for one value: it sweeps
client_multiplier * 1 .. client_multiplier * range_max clients (10 to 50
as published), and RANGE_MAX replaces range_max (19: 10 to 190 clients,
the sweep of herdlab's aws-occ-10.yaml in docs/performance.md).

pandas and bokeh hold its table of results and draw its chart after the
runs. Where they are not installed, stand-ins that keep the table and draw
nothing take their place: the simulator's own CPU is the same either way,
and importing the real libraries would only add to the Python side's time.

Usage: python3 aws_sim_sweep.py SIMULATOR.py RANGE_MAX WORKDIR
The simulator writes backoff_results.csv and its ts_* files into WORKDIR.
"""

import os
import sys
import types


def stand_ins():
    """Install minimal pandas and bokeh modules, where the real ones are missing."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        class Loc:
            def __init__(self, frame):
                self.frame = frame

            def __setitem__(self, key, row):
                self.frame.rows[key] = list(row)

        class DataFrame:
            def __init__(self, columns, index):
                self.columns = list(columns)
                self.index = list(index)
                self.rows = {}
                self.loc = Loc(self)

            def copy(self):
                return DataFrame(self.columns, self.index)

            def __getitem__(self, column):
                i = self.columns.index(column)
                return [self.rows.get(k, [None] * len(self.columns))[i] for k in self.index]

        pandas = types.ModuleType("pandas")
        pandas.DataFrame = DataFrame
        sys.modules["pandas"] = pandas
    try:
        import bokeh.plotting  # noqa: F401
        import bokeh.colors  # noqa: F401
    except ImportError:
        class Figure:
            def line(self, *args, **kwargs):
                pass

        bokeh = types.ModuleType("bokeh")
        plotting = types.ModuleType("bokeh.plotting")
        plotting.figure = lambda *args, **kwargs: Figure()
        plotting.show = lambda *args, **kwargs: None
        colors = types.ModuleType("bokeh.colors")
        colors.RGB = lambda r, g, b: (r, g, b)
        bokeh.plotting, bokeh.colors = plotting, colors
        sys.modules.update({"bokeh": bokeh, "bokeh.plotting": plotting, "bokeh.colors": colors})


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    path, range_max, workdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(path) as f:
        source = f.read()
    published = "range_max = 5\n"
    if source.count(published) != 1:
        sys.exit(f"{path}: expected one line {published.strip()!r}: not the published simulator")
    source = source.replace(published, f"range_max = {range_max}\n")
    stand_ins()
    os.chdir(workdir)
    exec(compile(source, path, "exec"), {"__name__": "__main__"})


main()
