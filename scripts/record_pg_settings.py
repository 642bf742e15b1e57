"""Write pgfslab/config/pg_settings.tsv: which PostgreSQL major has which setting, as the real servers say.

Installs every pinned build (pgfslab.host.pg_install), starts a throw-away cluster of each and of the
distribution's majors, and records `SELECT name FROM pg_settings`. Needs root (the clusters run as the
postgres user). Run it again when a pinned build changes:

    .venv/bin/python scripts/record_pg_settings.py
"""

from __future__ import annotations

import datetime as dt
import sys

from pgfslab.config import pg_settings
from pgfslab.host import pg_install, pg_probe


def main() -> int:
    builds = {}
    for major in sorted(pg_install.PINNED):
        builds[major] = pg_install.build_for(major, None)
    have: dict[str, set[int]] = {}
    for major, build in builds.items():
        names = [n for n, _, _ in pg_probe.server_settings(build)]
        print(f"PostgreSQL {build.version} ({build.source}): {len(names)} settings", file=sys.stderr)
        for name in names:
            have.setdefault(name, set()).add(major)
    lines = [
        "# Which PostgreSQL major has which setting: `SELECT name FROM pg_settings` of a throw-away cluster of each",
        f"# build below, recorded by scripts/record_pg_settings.py on {dt.date.today().isoformat()}.",
        *[f"#   {m}: PostgreSQL {b.version}, {b.origin}" for m, b in builds.items()],
        f"{pg_settings.MAJORS_LINE} {' '.join(map(str, builds))}",
        "# name<TAB>the majors that have it",
        *[f"{name}\t{' '.join(map(str, sorted(ms)))}" for name, ms in sorted(have.items())],
    ]
    pg_settings.TABLE.write_text("\n".join(lines) + "\n")
    print(f"wrote {pg_settings.TABLE} ({len(have)} settings)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
