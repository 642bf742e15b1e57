"""The `pgfslab` command line (also `python -m pgfslab`): run commands in `main`, data commands in `data`, statistics in `stats`."""
