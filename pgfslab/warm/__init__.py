"""A warm interpreter for the analysis stage: notebooks, their kernels and the paper start in milliseconds.

Executing one notebook cold costs about 6 s here before its first statistic: a process importing papermill
and nbclient (about 2 s), a kernel importing IPython and ipykernel (1 s), and the notebook's own first cell
importing polars, DuckDB, altair and the lab (3 s). A study runs a dozen notebooks and the paper, so that
set-up, not the analysis, was most of a re-analysis.

`server` is a process that has imported all of that once and forks a child for each request: a `pgfslab`
command (`python -m pgfslab.warm notebook ...` instead of `python -m pgfslab notebook ...`; the notebooks,
the paper and each run of a study) or a notebook's kernel (`kernel.WarmKernelManager`, given to papermill).
A run forked so starts in milliseconds instead of 0.7 s, and a precision round's decision finds scipy
imported (it took 2.5 s per round). Each child is a fresh process with the client's
standard streams, working directory, environment and arguments; nothing of one request reaches the next,
and the kernel is a real ipykernel, as JupyterLab starts one, only forked instead of exec'd.

`client` finds the server for this code (the socket's name holds a digest of the lab's source and the
environment, so an edited module never runs stale), starts one when there is none, and otherwise behaves as
the command it forwards: its exit status, signals passed on to the child. Where a server cannot be had, or
with PGFSLAB_WARM=0, the command runs cold in the client's own process: the same code, only slower.

A server only ever signals its own children, and exits by itself after `protocol.IDLE_S` seconds without
a request or a child.
"""
