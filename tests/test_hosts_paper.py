"""A study from two hosts' raw folders (tests/data/studies/two-hosts: recorded here under the host keys h1 and
h2, on this one machine) re-analysed with `make analyse`'s Snakemake command into one database and one
paper, with the hosts in the setup and the target comparison blocked by host.

The expected test statistic is computed here from the raw pgbench outputs with scipy's ranks and van
Elteren's formula written out again, not with the code under test.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from conftest import DATA, REPO
from scipy import stats as sps

pytestmark = pytest.mark.slow  # notebooks and the paper (about two minutes)

TWO = DATA / "studies" / "two-hosts"
HOSTS = ("h1", "h2")


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    work = tmp_path_factory.mktemp("hosts-paper")
    shutil.copytree(TWO, work / "data" / "raw" / "two-hosts")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",  # as `make` runs it
            "--snakefile",
            str(REPO / "workflow" / "Snakefile"),
            "--cores",
            "2",
            "--config",
            "study=two-hosts",
            "raw_only=1",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, f"{res.stdout[-3000:]}\n{res.stderr[-5000:]}"
    yield work


def _tps(run_dir: Path) -> float:
    line = next(ln for ln in (run_dir / "pgbench.stdout").read_text().splitlines() if ln.startswith("tps = "))
    return float(line.split()[2])


def _expected_z() -> float:
    t = e = v = 0.0
    for h in HOSTS:
        runs = [json.loads(p.read_text()) for p in sorted((TWO / h).glob("*/run.json"))]
        vals = [(r["target"], _tps(TWO / h / r["run_id"])) for r in runs]
        ranks = sps.rankdata([x for _, x in vals])
        n = len(vals)
        k = sum(1 for tg, _ in vals if tg == "xfs")
        m = n - k
        t += sum(rk for rk, (tg, _) in zip(ranks, vals) if tg == "xfs") / (n + 1)
        e += k / 2
        v += m * k / (12 * (n + 1))  # the recorded tps values have no ties (checked below)
        assert len({x for _, x in vals}) == n
    return (t - e) / math.sqrt(v)


def test_one_database_with_both_hosts(analysed: Path) -> None:
    with duckdb.connect(str(analysed / "data" / "two-hosts.duckdb"), read_only=True) as con:
        got = con.execute(
            "SELECT host, count(*) FROM runs WHERE origin = 'local' GROUP BY host ORDER BY host"
        ).fetchall()
    assert got == [(h, len(list((TWO / h).glob("*/run.json")))) for h in HOSTS]


def test_paper_lists_hosts_and_the_blocked_comparison(analysed: Path) -> None:
    text = subprocess.run(
        ["pdftotext", "-layout", str(analysed / "paper" / "two-hosts.pdf"), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    flat = " ".join(text.split())
    assert "Hosts" in flat and "Across hosts" in flat and "van Elteren" in flat
    hostname = json.loads((TWO / "h1" / "host.json").read_text())["machine"]["hostname"]
    assert f"same machine ({hostname})" in flat
    row = next(ln for ln in text.splitlines() if re.match(r"\s*tpcb\s+2\s+xfs\s+h1 ", ln))
    z = float(row.split()[-4])
    p = float(row.split()[-3])
    assert z == pytest.approx(_expected_z(), abs=0.006)
    assert p == pytest.approx(2 * sps.norm.sf(abs(_expected_z())), abs=6e-5)
    for bad in (r"Traceback", r"\bnan\b", r"\bNone\b"):
        assert not re.search(bad, flat)


def test_figure_by_host(analysed: Path) -> None:
    svg = (analysed / "figures" / "two-hosts" / "hosts_by_target.svg").read_text()
    assert all(h in svg for h in HOSTS)
