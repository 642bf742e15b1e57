"""The workload tools' registry (pgfslab.tools) against what the pipeline asks of each tool: the config
schema names exactly the registered tools and their keys, each tool has its runner and a life cycle a run can
call."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import polars as pl
import pytest
import yaml

from pgfslab.config.checks import COMMON_KEYS
from pgfslab.config.model import Workload
from pgfslab.errors import LabError
from pgfslab.records.config_node import config_fields
from pgfslab.tools import DRIVEN_KEYS, PG_TOOLS, RATIO_TOOLS, TOOLS, ToolOptions, tool
from pgfslab.tools.pgbench import PgbenchOptions
from pgfslab.tools.sysbench import SysbenchOptions

REPO = Path(__file__).resolve().parent.parent
SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())


def _workload_schema() -> dict:
    found = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict) and "tool" in props and "enum" in props["tool"]:
                found.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(SCHEMA)
    assert len(found) == 1, "one workload definition in the config schema"
    return found[0]


def test_the_config_schema_names_exactly_the_registered_tools() -> None:
    assert set(_workload_schema()["properties"]["tool"]["enum"]) == set(TOOLS)


def test_every_tool_key_is_a_workload_property_and_every_property_has_an_owner() -> None:
    props = set(_workload_schema()["properties"])
    for t in TOOLS.values():
        assert t.keys <= props, f"{t.name}: keys the schema does not define: {sorted(t.keys - props)}"
    owned = set(COMMON_KEYS).union(*(t.keys for t in TOOLS.values()))
    assert props <= owned, f"workload properties no tool owns: {sorted(props - owned)}"


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_has_its_runner_and_a_headline(name: str) -> None:
    runner = importlib.import_module(f"pgfslab.runners.{name}")
    assert runner.__doc__, f"pgfslab.runners.{name} says what it runs"
    assert TOOLS[name].headline


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_names_a_life_cycle_a_run_can_call(name: str) -> None:
    from pgfslab.run import execute

    cycle = execute.life_cycle(name)
    assert callable(cycle)
    assert list(inspect.signature(cycle).parameters) == ["view", "rdir", "mnt", "record", "ph"], TOOLS[name].life_cycle


def test_the_derived_sets_and_an_unknown_tool() -> None:
    assert PG_TOOLS == {"pgbench", "sysbench", "durability"} and "fsmicro" not in PG_TOOLS
    assert RATIO_TOOLS == {"pgbench", "sysbench"}
    with pytest.raises(KeyError, match="no workload tool 'hammerdb' \\(tools: pgbench, sysbench"):
        tool("hammerdb")


SPECS = {
    "pgbench": ({"tool": "pgbench", "builtin": "tpcb-like", "rate_tps": 500, "log": "transactions"},
                "pgbench tpcb-like", ["--rate 500", "per-transaction log"]),
    "sysbench": ({"tool": "sysbench", "test": "oltp_read_write", "histogram": True},
                 "sysbench oltp_read_write", ["p95 per second, histogram"]),
    "fsmicro": ({"tool": "fsmicro", "op": "write_fsync", "size_bytes": 4096},
                "fsmicro write_fsync", ["size_bytes 4096"]),
    "durability": ({"tool": "durability", "crash": "power-loss", "crash_after_s": 5},
                   "durability power-loss crash after 5 s of TPC-B", []),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_runner_says_what_its_workload_is_and_how_it_was_driven(name: str) -> None:
    from pgfslab.config.study import Study, validate
    from pgfslab.runners import runner

    workload, what, how = SPECS[name]
    cfg = {"study": "t", "targets": {"ext4": {"fs": "ext4"}}, "workloads": {"w": workload}}
    spec = Study.from_dict(validate(cfg, "t.yaml")).workloads["w"]
    assert runner(name).describe(spec) == what
    assert runner(name).how(spec) == how


def test_every_tool_with_a_headline_number_reads_it_from_its_own_format() -> None:
    """A tool's headline (its unit in the registry) comes from the one parser format that holds it
    (`HEADLINE` in its module, gathered in ingest.parsers.HEADLINES): a tool added without one has no number."""
    import duckdb

    from pgfslab.ingest.parsers import FORMATS, HEADLINES

    assert set(HEADLINES) == {name for name, t in TOOLS.items() if t.unit is not None}
    tables = {table: schema for mod in FORMATS.values() for table, schema in mod.TABLES.items()}
    con = duckdb.connect()
    for name, (table, sql) in HEADLINES.items():
        assert table in tables, (name, table)
        con.register("empty_frame", pl.DataFrame(schema={**tables[table], "run_id": pl.Utf8}))
        con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM empty_frame")
        cols = [d[0] for d in con.execute(f"SELECT * FROM ({sql}) LIMIT 0").description]
        assert cols == ["run_id", "value", "transactions", "failed", "elapsed_s"], name


def _workload(**keys: object) -> Workload:
    from pgfslab.config.study import Study, validate

    cfg = {"study": "t", "targets": {"ext4": {"fs": "ext4"}}, "workloads": {"w": keys}}
    return Study.from_dict(validate(cfg, "t.yaml")).workloads["w"]


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_is_one_module_whose_options_are_its_keys(name: str) -> None:
    """pgfslab.tools.<name> registers the tool; its options class holds exactly the tool's own keys (the
    driven keys, prewarm, rungs and context, are the workload's own, for every tool with a ladder)."""
    module = importlib.import_module(f"pgfslab.tools.{name}")
    t = TOOLS[name]
    assert module.TOOL is t and issubclass(t.options, ToolOptions) and module.__doc__
    own = {f.name for f in config_fields(t.options)}
    assert own and t.keys == own | (DRIVEN_KEYS if t.has_ladder else set())
    assert not own & set(COMMON_KEYS), "a tool's option is not a key every workload has"


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_a_workload_keeps_its_tools_options_typed_and_gives_the_flat_mapping_back(name: str) -> None:
    keys, *_ = SPECS[name]
    wl = _workload(**keys)
    assert type(wl.options) is TOOLS[name].options
    for key, value in keys.items():
        if key != "tool":
            assert getattr(wl.options, key) == value, key
    given = wl.to_dict()
    assert list(given)[: len(keys)] == list(keys) and {k: given[k] for k in keys} == keys
    # the schema's defaults of other tools' keys stay in the mapping (every fingerprint has them), outside the options
    assert set(wl.other_tools_keys) <= {"per_statement", "log", "percentile", "histogram"}
    assert all(k in given for k in wl.other_tools_keys)
    assert type(Workload.from_dict(given).options) is TOOLS[name].options and Workload.from_dict(given) == wl


def test_a_runner_asks_for_its_own_tools_options() -> None:
    wl = _workload(tool="sysbench", test="oltp_read_only")
    assert wl.options_as(SysbenchOptions).test == "oltp_read_only"
    with pytest.raises(LabError, match="a sysbench workload has no PgbenchOptions"):
        wl.options_as(PgbenchOptions)
    with pytest.raises(LabError, match="PgbenchOptions are not the options of tool sysbench"):
        Workload(tool="sysbench", options=PgbenchOptions(builtin="tpcb-like"))
    with pytest.raises(LabError, match="tool 'hammerdb' is not one of pgbench"):
        Workload(tool="hammerdb")
    assert type(Workload(tool="fsmicro").options) is TOOLS["fsmicro"].options  # not given: its tool's defaults
    with pytest.raises(LabError, match=r"workloads.w: unknown key\(s\) colour"):
        Workload.from_dict({"tool": "pgbench", "builtin": "tpcb-like", "colour": "red"}, "workloads.w")


@pytest.mark.parametrize(
    ("keys", "what", "writes", "latency", "counted"),
    [
        ({"tool": "pgbench", "builtin": "select-only"}, "select-only", False, True, None),
        ({"tool": "pgbench", "builtin": "tpcb-like", "log": "none", "transactions": 500}, "tpcb-like", True, False, 500),
        ({"tool": "pgbench", "scripts": [{"file": "/x/seqscan.sql"}]}, "seqscan.sql", True, True, None),
        ({"tool": "pgbench", "builtin": "select-only", "scripts": [{"file": "/x/w.sql"}]}, "select-only, w.sql", True, True, None),
        ({"tool": "sysbench", "test": "oltp_read_only"}, "oltp_read_only", False, True, None),
        ({"tool": "sysbench", "test": "oltp_write_only"}, "oltp_write_only", True, True, None),
        ({"tool": "fsmicro", "op": "statfs"}, "statfs", False, False, None),
        ({"tool": "durability", "crash": "kill"}, "kill crash", False, False, None),
    ],
)  # fmt: skip
def test_what_each_tool_answers_of_its_options(
    keys: dict[str, object], what: str, writes: bool, latency: bool, counted: int | None
) -> None:
    o = _workload(**keys).options
    assert (o.what(), o.writes(), o.logs_latency(), o.transactions_per_client()) == (what, writes, latency, counted)


@pytest.mark.parametrize(
    ("keys", "words"),
    [
        ({"tool": "fsmicro", "op": "statfs", "clients": [1, 2]}, "fsmicro runs single-threaded: clients must be [1]"),
        ({"tool": "fsmicro", "op": "statfs", "files": 10}, "statfs does not take files"),
        ({"tool": "sysbench"}, "sysbench needs `test`"),
    ],
)
def test_a_tools_own_checks_refuse_its_options(keys: dict[str, object], words: str) -> None:
    with pytest.raises(LabError, match=words.replace("[", r"\[").replace("]", r"\]")):
        _workload(**keys)
