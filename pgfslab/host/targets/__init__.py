"""A study's targets on the machine: created afresh (`create`), mounted for a block (`mount`, giving a
`mounted.Mounted`), mounted again after a power cut (`remount`), released on every exit path (`release`), and
where each of their pieces lives (`paths`)."""
