"""`python -m pgfslab COMMAND` (the same as the `pgfslab` console command)."""

from pgfslab.cli.main import main

raise SystemExit(main())
