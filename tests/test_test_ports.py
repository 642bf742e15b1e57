"""The fixed ports the test files start servers on lie below the kernel's ephemeral range, from which other
workers' servers (pg_probe.free_port, the Slurm helper) get theirs while the files run side by side."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

FIXED = re.compile(r"""(?:"port_base":\s*|^PORT\s*=\s*|running\([^\n]*?,\s*)(\d{4,5})\b""", re.MULTILINE)


def ephemeral_low() -> int:
    path = Path("/proc/sys/net/ipv4/ip_local_port_range")
    return int(path.read_text().split()[0]) if path.exists() else 32768


def fixed_ports() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in sorted(p for p in (REPO / "tests").glob("*.py") if p.name != Path(__file__).name):
        ports = [int(m) for m in FIXED.findall(path.read_text())]
        if ports:
            found[path.name] = ports
    return found


def test_the_pattern_finds_the_fixed_ports_it_is_meant_to() -> None:
    text = '    "postgres": {"port_base": 26400, "settings": {}},\nPORT = 26940  # own\n'
    text += 'with postgres.running(Path(tmp) / "pgdata", 25999, hidden / "bin"):\n'
    assert [int(m) for m in FIXED.findall(text)] == [26400, 26940, 25999]


def test_fixed_test_ports_are_below_the_ephemeral_range() -> None:
    found = fixed_ports()
    assert len(found) >= 6, found  # the files that start servers on ports of their own
    low = min(ephemeral_low(), 32768)
    inside = {name: [p for p in ports if p >= low] for name, ports in found.items()}
    assert not any(inside.values()), f"ports at or above {low} (the ephemeral range): {inside}"


def test_fixed_test_ports_are_not_shared_between_files() -> None:
    """Each file's servers on ports of their own (a study's targets take port_base, port_base + 1, ...)."""
    owners: dict[int, str] = {}
    for name, ports in fixed_ports().items():
        for base in set(ports):
            for port in range(base, base + 4):
                assert owners.setdefault(port, name) == name, f"{port}: {owners[port]} and {name}"
