"""Config values that reach a command or a config file are validated: shell and config injection through
every such key is refused by config validation, with a message naming the key; and no shell is used.

(The running server's side — unix socket only, TCP refused, the socket directory's mode, no password
anywhere — is checked on a real cluster in tests/test_faults.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pgfslab.config.study import validate
from pgfslab.errors import LabError
from pgfslab.host import postgres

REPO = Path(__file__).resolve().parent.parent

ATTACKS = [
    "x'; DROP TABLE pgbench_accounts; --",
    "1\ninclude '/etc/passwd'",
    "$(reboot)",
    "`reboot`",
    "on\n",
    "a;reboot",
    "a|reboot",
    'a"b',
    "a\\b",
]


def base() -> dict:
    return {
        "study": "t",
        "targets": {"a": {"fs": "ext4"}, "e": {"fs": "existing", "path": "/srv/data"}},
        "workloads": {
            "w": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1]},
            "s": {"tool": "pgbench", "scripts": [{"file": "my.sql"}], "clients": [1]},
        },
    }


def _set(cfg: dict, where: str, value: object) -> None:
    """Set cfg at a dotted path; `{}` at the end means: use `value` as a key (with value 1)."""
    *parents, last = where.split(".")
    node = cfg
    for k in parents:
        node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})
    if last == "{}":
        node[value] = "1"
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


# (where the attack goes, the key path the error must name)
PLACES = [
    ("targets.{}", "targets"),  # a target name
    ("workloads.{}", "workloads"),  # a workload name
    ("study", "study"),
    ("postgres.settings.{}", "postgres.settings"),  # a setting name
    ("postgres.settings.shared_buffers", "postgres.settings.shared_buffers"),  # a setting value
    ("targets.a.postgres_settings.{}", "targets.a.postgres_settings"),
    ("targets.a.postgres_settings.work_mem", "targets.a.postgres_settings.work_mem"),
    ("workloads.w.postgres_settings.{}", "workloads.w.postgres_settings"),
    ("workloads.w.postgres_settings.synchronous_commit", "workloads.w.postgres_settings.synchronous_commit"),
    ("targets.a.mount_options", "targets.a.mount_options.0"),
    ("targets.a.mkfs_options", "targets.a.mkfs_options.0"),
    ("workloads.s.scripts.0.file", "workloads.s.scripts.0.file"),
    ("workdir", "workdir"),
    ("targets.e.path", "targets.e.path"),
    ("postgres.bindir", "postgres.bindir"),
    ("postgres.user", "postgres.user"),
    ("targets.a.device", "targets.a.device"),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: repr(a)[:24])
@pytest.mark.parametrize("where, key", PLACES, ids=[p[0] for p in PLACES])
def test_injection_is_refused_naming_the_key(where: str, key: str, attack: str) -> None:
    cfg = base()
    value: object = attack
    if where.endswith(("mount_options", "mkfs_options")):
        value = [attack]
    elif where in ("workloads.s.scripts.0.file",):
        value = attack + ".sql"
    elif where in ("targets.e.path", "postgres.bindir"):
        value = "/srv/" + attack
    elif where == "targets.a.device":
        value = "/dev/" + attack
    _set(cfg, where, value)
    with pytest.raises(LabError) as err:
        validate(cfg, "my.yaml")
    text = str(err.value)
    assert f"my.yaml: {key}" in text, text


def test_an_innocent_config_passes() -> None:
    cfg = validate(base(), "my.yaml")
    assert cfg["workloads"]["w"]["tool"] == "pgbench"


@pytest.mark.parametrize(
    "name, value",
    [
        ("shared_buffers", "1\ninclude '/etc/passwd'"),
        ("x'; DROP", "1"),
        ("work_mem", "4MB' \ninclude '/etc/passwd"),
        ("a\nb", "1"),
        ("fsync", "on\n"),
        ("search_path", "a\\'"),
    ],
)
def test_server_config_lines_refuse_what_validation_refuses(name: str, value: str) -> None:
    """The second line of defence, where the config file is written."""
    with pytest.raises(LabError, match="refusing PostgreSQL setting"):
        postgres._conf_line(name, value)


def test_server_config_lines_for_good_settings() -> None:
    assert postgres._conf_line("shared_buffers", "128MB") == "shared_buffers = '128MB'"
    assert postgres._conf_line("fsync", False) == "fsync = off"
    assert postgres._conf_line("checkpoint_timeout", "5min") == "checkpoint_timeout = '5min'"


@pytest.mark.parametrize("bad", ["/tmp/$(reboot)/pgdata", "/tmp/`id`/pgdata", '/tmp/a"b/pgdata', "/tmp/a\nb/pgdata"])
def test_data_directory_that_pg_ctl_shell_would_expand_is_refused(bad: str) -> None:
    """pg_ctl runs `/bin/sh -c 'exec "postgres" -D "<pgdata>" ...'`: a $ or ` in the path would run."""
    with pytest.raises(LabError, match="pg_ctl's shell"):
        postgres._check_shell_safe(Path(bad))


SHELL_USES = re.compile(
    r"shell\s*=\s*True|os\.system\s*\(|os\.popen\s*\(|commands\.getoutput|pty\.spawn|"
    r"subprocess\.(?:getoutput|getstatusoutput)\s*\("
)


def test_no_shell_is_ever_used() -> None:
    """Commands are argument lists: nothing in the lab's Python calls a shell."""
    offenders = []
    for path in sorted(
        [
            *REPO.glob("pgfslab/**/*.py"),
            *REPO.glob("benchmarks/*.py"),
            *REPO.glob("scripts/*.py"),
            *REPO.glob("tests/*.py"),
        ]
    ):
        if path.name == Path(__file__).name:
            continue
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if SHELL_USES.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{no}: {line.strip()}")
    assert offenders == []


def test_snakemake_shell_commands_quote_the_config_path() -> None:
    """Snakemake runs its `shell:` directives with bash: the one free-form value they interpolate (the
    config path from the command line) is quoted; the rest are validated wildcards and fixed paths."""
    for smk in REPO.glob("workflow/rules/*.smk"):
        text = smk.read_text()
        assert "{params.src}" not in text, f"{smk.name}: unquoted {{params.src}} (use {{params.src:q}})"
