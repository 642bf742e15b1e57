"""What sysbench prints, per version: the interval lines, the report's fields, the set-up lines and
the chatter, as regexes matched against whole lines. The `sysbench` format reads files with them.

Interval lines (`--report-interval`), one layout each (named groups are `sysbench_interval` columns):

    0.5 (early)  [   5s] threads: 64, tps: 7536.63, reads/s: 105633.06, writes/s: 0.00 response time: 15.73ms (99%)
    0.5 (mid)    [   5s] threads: 16, tps: 2717.21, reads/s: 38067.23, writes/s: 10869.86, response time: 9.55ms (99%)
    0.5 (late)   [   2s] threads: 1, tps: 258.56, reads: 0.00, writes: 4659.16, response time: 5.18ms (95%), errors: 0.00, reconnects:  0.00
    1.x OLTP     [ 1s ] thds: 2 tps: 190.82 qps: 3868.35 (r/w/o: 2713.44/765.28/389.63) lat (ms,95%): 0.84 err/s: 1.00 reconn/s: 0.00
    1.x (cpu, memory, threads, mutex: sb_report_intermediate)   [ 1s ] thds: 2 eps: 1664.48 lat (ms,95%): 4.57
    1.x fileio   [ 1s ] reads: 0.00 MiB/s writes: 647.81 MiB/s fsyncs: 1654.39/s latency (ms,95%): 0.005
    1.x --rate   [ 1s ] queue length: 0, concurrency: 0          (joined onto the interval's row)

0.5's `reads`/`writes` are per second, as its early `reads/s` said: they go to `qps_read`/`qps_write`
(0.5 prints no total qps and no `other`). The Lua helper `sysbench.report_default` prints `err/s 1.00`
without the colon: read the same.

The end-of-run report. 1.x OLTP opens with `SQL statistics:`, 0.4/0.5 OLTP with `OLTP test
statistics:` (`queries performed:` read/write/other/total, `transactions:`, then 0.4/early 0.5
`deadlocks:`, `read/write requests:`, `other operations:`, late 0.5 `ignored errors:`/`reconnects:`).
The other tests print their own section first: 1.0 cpu `CPU speed:` / `events per second:`; 1.x
fileio `File operations:` (`reads/s:` `writes/s:` `fsyncs/s:`) and `Throughput:` (`read, MiB/s:`
`written, MiB/s:`); 1.x memory `Total operations: N (X per second)` and `X MiB transferred (Y
MiB/sec)`; 0.4/0.5 fileio `Operations performed:  N Read, N Write, N Other = N Total`, `Read
179.06Mb  Written 119.38Mb  Total transferred 298.44Mb  (1018.6Kb/sec)` (units of 1024: b, Kb, Mb,
Gb, Tb; stored in MiB) and `63.66 Requests/sec executed` (a request is the test's event: events_per_s).
Then every test: 1.x `General statistics:` (or later 1.1 `Throughput:` with `events/s (eps):` and
`time elapsed:`), `Latency (ms):` min/avg/max/`95th percentile:`/`sum:`; 0.4 `Test execution
summary:` and 0.5 `General statistics:` with `total time taken by event execution: X[s]` (= 1.x's
latency `sum:`, stored in ms) and `per-request statistics:` (0.4) / `response time:` (0.5, early
1.0) with `min: 3.00ms` ... `approx.  95 percentile: 3.94ms`; last `Threads fairness:`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgfslab.ingest.parsers._common import BLANK, NUM, prompt

_T = r"^\[\s*(?P<t_s>\d+(?:\.\d+)?)s\s*\] "
INTERVAL_START = r"^\[\s*\d+(?:\.\d+)?s\s*\] "
_LAT = rf"lat \(ms,(?P<latency_pct>\d+)%\): (?P<latency_ms>{NUM})"

INTERVALS: dict[str, str] = {
    "oltp 1.x": (
        _T + rf"thds: (?P<threads>\d+) tps: (?P<tps>{NUM}) qps: (?P<qps>{NUM}) "
        rf"\(r/w/o: (?P<qps_read>{NUM})/(?P<qps_write>{NUM})/(?P<qps_other>{NUM})\) {_LAT} "
        rf"err/s:? (?P<errors_per_s>{NUM}) reconn/s: (?P<reconnects_per_s>{NUM})$"
    ),
    "events 1.x": _T + rf"thds: (?P<threads>\d+) eps: (?P<events_per_s>{NUM}) {_LAT}$",
    "fileio 1.x": (
        _T + rf"reads: (?P<read_mib_per_s>{NUM}) MiB/s writes: (?P<written_mib_per_s>{NUM}) MiB/s "
        rf"fsyncs: (?P<fsyncs_per_s>{NUM})/s latency \(ms,(?P<latency_pct>\d+)%\): (?P<latency_ms>{NUM})$"
    ),
    "oltp 0.5": (
        _T + rf"threads: (?P<threads>\d+), tps: (?P<tps>{NUM}), reads(?:/s)?: (?P<qps_read>{NUM}), "
        rf"writes(?:/s)?: (?P<qps_write>{NUM}),? response time: (?P<latency_ms>{NUM})ms \((?P<latency_pct>\d+)%\)"
        rf"(?:, errors: (?P<errors_per_s>{NUM}), reconnects:\s+(?P<reconnects_per_s>{NUM}))?$"
    ),
}
QUEUE = _T + r"queue length: (?P<queue_length>\d+), concurrency: (?P<concurrency>\d+)$"
INTERVAL_EXPECTED = (
    "expected '[ Ns ] thds: N tps: X qps: X (r/w/o: X/X/X) lat (ms,P%): X err/s: X reconn/s: X' "
    "(or 1.x's eps/fileio lines, or 0.5's '[ Ns] threads: N, tps: X, reads: X, writes: X, response time: Xms (P%)')"
)

HIST_HEADER = r"^Latency histogram \(values are in milliseconds\)$"
HIST_COLUMNS = r"^\s*value\s+-+ distribution -+\s+count$"
HIST_ROW = rf"^\s*({NUM}) \|\**\s*(\d+)$"

VERSION = r"^sysbench (\d+\.\d+(?:\.\d+)?[^\s:]*)(?::?\s.*)?$"
# the first line of an end-of-run report that belongs to one run only (a second one is a second report)
REPORT_START = r"^(?:SQL statistics|OLTP test statistics):$"
# the report's section titles (parsed: they label the values below them)
SECTIONS = (
    r"^(?:SQL statistics|OLTP test statistics|General statistics|Test execution summary|Throughput|"
    r"Latency \(ms\)|Threads fairness|CPU speed|File operations|Latency histogram \(values are in milliseconds\)):$"
    r"|^\s+(?:queries performed|per-request statistics|response time):$"
)


@dataclass(frozen=True)
class Field:
    """One value of a run: `column` of sysbench_summary from group `group` of `pattern`; with `unit`,
    group `unit` holds the unit (b, Kb, Mb, Gb, Tb: powers of 1024) and the value is stored in MiB;
    `scale` multiplies it (seconds to ms). `header` fields are printed before the run starts (the
    first in a run counts); the others belong to the report and may appear once per run."""

    column: str
    pattern: str
    label: str
    group: int = 1
    unit: int | None = None
    scale: float = 1.0
    header: bool = False


_N = r"(\d+)"
_PS = rf"\s+\(({NUM}) per sec\.\)"
_SIZE = rf"({NUM})([KMGT]?)b"


def _pair(count: str, rate: str, name: str, label: str) -> list[Field]:
    """A report line `name: N (X per sec.)`: the count and its rate."""
    pattern = rf"^\s+{name}:\s+{_N}{_PS}$"
    return [Field(count, pattern, label), Field(rate, pattern, label, group=2)]


FILE_OPS = ("file_reads", "file_writes", "file_other_ops", "file_total_ops")
FILE_TRANSFER = ("file_read_mib", "file_written_mib", "file_transferred_mib", "file_transferred_mib_per_s")
_OPS = r"^Operations performed:\s+(\d+) (?:Read|reads), (\d+) (?:Write|writes), (\d+) Other = (\d+) Total$"
_TRANSFER = rf"^Read {_SIZE}\s+Written {_SIZE}\s+Total transferred {_SIZE}\s+\({_SIZE}/sec\)$"
_MEM_OPS = rf"^Total operations: (\d+) \(\s*({NUM}) per second\)$"
_MEM_MIB = rf"^({NUM}) MiB transferred \(({NUM}) MiB/sec\)$"
_FAIR_EVENTS = rf"^\s+events \(avg/stddev\):\s+({NUM})/({NUM})$"
_FAIR_TIME = rf"^\s+execution time \(avg/stddev\):\s+({NUM})/({NUM})$"
_PCT_NEW = rf"^\s+(\d+)th percentile:\s+({NUM})$"
_PCT_OLD = rf"^\s+approx\.\s+(\d+) percentile:\s+({NUM})ms$"

FIELDS: list[Field] = [
    # before the run
    Field("sysbench_version", VERSION, "sysbench <version>", header=True),
    Field("threads", r"^Number of threads: (\d+)$", "Number of threads: N", header=True),
    Field("target_tps", rf"^Target transaction rate: ({NUM})/sec$", "Target transaction rate: N/sec", header=True),
    Field("cpu_max_prime", r"^Prime numbers limit: (\d+)$", "Prime numbers limit: N", header=True),
    # OLTP, every version
    Field("queries_read", rf"^\s+read:\s+{_N}$", "read: N"),
    Field("queries_write", rf"^\s+write:\s+{_N}$", "write: N"),
    Field("queries_other", rf"^\s+other:\s+{_N}$", "other: N"),
    Field("queries_total", rf"^\s+total:\s+{_N}$", "total: N"),
    *_pair("transactions", "tps", "transactions", "transactions: N (X per sec.)"),
    *_pair("_queries", "qps", "queries", "queries: N (X per sec.)"),
    *_pair("ignored_errors", "ignored_errors_per_s", "ignored errors", "ignored errors: N (X per sec.)"),
    *_pair("reconnects", "reconnects_per_s", "reconnects", "reconnects: N (X per sec.)"),
    # OLTP 0.4/0.5
    *_pair("deadlocks", "deadlocks_per_s", "deadlocks", "deadlocks: N (X per sec.)"),
    *_pair("rw_requests", "rw_requests_per_s", "read/write requests", "read/write requests: N (X per sec.)"),
    *_pair("other_operations", "other_operations_per_s", "other operations", "other operations: N (X per sec.)"),
    # cpu
    Field("events_per_s", rf"^\s+events per second:\s+({NUM})$", "events per second: X"),
    Field("cpu_max_prime", r"^Maximum prime number checked in CPU test: (\d+)$", "Maximum prime number checked"),
    # fileio 1.x
    Field("file_reads_per_s", rf"^\s+reads/s:\s+({NUM})$", "reads/s: X"),
    Field("file_writes_per_s", rf"^\s+writes/s:\s+({NUM})$", "writes/s: X"),
    Field("file_fsyncs_per_s", rf"^\s+fsyncs/s:\s+({NUM})$", "fsyncs/s: X"),
    Field("file_read_mib_per_s", rf"^\s+read, MiB/s:\s+({NUM})$", "read, MiB/s: X"),
    Field("file_written_mib_per_s", rf"^\s+written, MiB/s:\s+({NUM})$", "written, MiB/s: X"),
    # fileio 0.4/0.5
    *(Field(c, _OPS, "Operations performed: ...", group=i) for i, c in enumerate(FILE_OPS, 1)),
    *(
        Field(c, _TRANSFER, "Read X Written X Total transferred X (X/sec)", group=2 * i - 1, unit=2 * i)
        for i, c in enumerate(FILE_TRANSFER, 1)
    ),
    Field("events_per_s", rf"^\s*({NUM}) Requests/sec executed$", "X Requests/sec executed"),
    # memory 1.x
    Field("memory_ops", _MEM_OPS, "Total operations: N (X per second)"),
    Field("memory_ops_per_s", _MEM_OPS, "Total operations: N (X per second)", group=2),
    Field("memory_mib", _MEM_MIB, "X MiB transferred (X MiB/sec)"),
    Field("memory_mib_per_s", _MEM_MIB, "X MiB transferred (X MiB/sec)", group=2),
    # every test: totals, latency, fairness
    Field("total_time_s", rf"^\s+(?:total time|time elapsed):\s+({NUM})s$", "total time: Xs"),
    Field("total_events", rf"^\s+total number of events:\s+{_N}$", "total number of events: N"),
    Field("events_per_s", rf"^\s+events/s \(eps\):\s+({NUM})$", "events/s (eps): X"),
    Field(
        "latency_sum_ms",
        rf"^\s+total time taken by event execution:\s+({NUM})s?$",
        "total time taken by event execution: X",
        scale=1000.0,
    ),
    Field("latency_min_ms", rf"^\s+min:\s+({NUM})(?:ms)?$", "min: X"),
    Field("latency_avg_ms", rf"^\s+avg:\s+({NUM})(?:ms)?$", "avg: X"),
    Field("latency_max_ms", rf"^\s+max:\s+({NUM})(?:ms)?$", "max: X"),
    Field("latency_pct", _PCT_NEW, "NNth percentile: X"),
    Field("latency_pct_ms", _PCT_NEW, "NNth percentile: X", group=2),
    Field("latency_pct", _PCT_OLD, "approx.  NN percentile: Xms"),
    Field("latency_pct_ms", _PCT_OLD, "approx.  NN percentile: Xms", group=2),
    Field("_pct_disabled", r"^\s+(percentile stats):\s+disabled$", "percentile stats: disabled"),
    Field("latency_sum_ms", rf"^\s+sum:\s+({NUM})$", "sum: X"),
    Field("events_per_thread_avg", _FAIR_EVENTS, "events (avg/stddev): X/Y"),
    Field("events_per_thread_stddev", _FAIR_EVENTS, "events (avg/stddev): X/Y", group=2),
    Field("execution_time_per_thread_avg_s", _FAIR_TIME, "execution time (avg/stddev): X/Y"),
    Field("execution_time_per_thread_stddev_s", _FAIR_TIME, "execution time (avg/stddev): X/Y", group=2),
]

# The report's lines that every report has, in the order sysbench prints them (the latency sum comes
# before min/avg/max in 0.4/0.5, after them in 1.x)
TAIL_1X = (
    "total_time_s",
    "total_events",
    "latency_min_ms",
    "latency_avg_ms",
    "latency_max_ms",
    "latency_sum_ms",
    "events_per_thread_avg",
    "execution_time_per_thread_avg_s",
)
TAIL_OLD = (
    "total_time_s",
    "total_events",
    "latency_sum_ms",
    "latency_min_ms",
    "latency_avg_ms",
    "latency_max_ms",
    "events_per_thread_avg",
    "execution_time_per_thread_avg_s",
)
OLD_TAIL_MARK = r"^\s+total time taken by event execution:"
# and before it, an OLTP report's lines
OLTP_1X = (
    "queries_read",
    "queries_write",
    "queries_other",
    "queries_total",
    "transactions",
    "_queries",
    "ignored_errors",
    "reconnects",
)
OLTP_OLD = ("queries_read", "queries_write", "queries_other", "queries_total", "transactions", "rw_requests")

# which test a run is, from the first of these lines in it
TESTS: list[tuple[str, str]] = [
    (r"^(?:SQL statistics|OLTP test statistics):$|^Doing OLTP test\.$", "oltp"),
    (r"^CPU speed:$|^Prime numbers limit: |^Maximum prime number checked|^Doing CPU performance benchmark$", "cpu"),
    (r"^File operations:$|^Operations performed: |^Extra file open flags: ", "fileio"),
    (r"^Total operations: |^Running memory speed test", "memory"),
]

# How a run was set up, as sysbench describes it before it starts (kept as text in sysbench_options):
# fileio's mode, file and block sizes, sync mode; 0.4 OLTP's mode and distribution; the seed; memory's
# options; and what `prepare` printed about the files it made.
OPTIONS = [
    r"^Report intermediate results every \d+ second",
    r"^Initializing random number generator from ",
    r"^Random number generator seed is \d+",
    r"^Warmup time: \d+s$",
    r"^Extra file open flags: ",
    r"^\d+ files, \S+ each(?:, \S+ total)?$",
    r"^\S+ total file size$",
    r"^Block size \S+$",
    r"^Number of (?:random requests for random IO|IO requests): \d+$",
    rf"^Read/Write ratio for combined random IO test: {NUM}$",
    r"^Periodic FSYNC enabled, calling fsync\(\) each \d+ requests\.$",
    r"^Calling fsync\(\) at the end of test, (?:Enabled|Disabled)\.$",
    r"^Using (?:synchronous|asynchronous|mmap) I/O mode$",
    r"^Doing .+ (?:test\.?|benchmark)$",
    r"^Running (?:simple OLTP test|memory speed test with the following options:)$",
    r"^Using \w+ distribution$",
    r"^Skipping BEGIN/COMMIT$",
    r"^Using auto_inc on the id column$",
    r"^No DB drivers specified, using \w+$",
    r"^  (?:block size|total size|operation|scope): \S+$",
    rf"^\d+ bytes written in {NUM} seconds \({NUM} MiB/sec\)\.$",
]

# Chatter: recognised, nothing to keep (progress of prepare/cleanup, start and stop messages, the
# deprecation warnings of 1.x, the shell prompt of a pasted session)
NOISE = [
    BLANK,
    r"^Running the test with following options:$",
    r"^Initializing worker threads\.\.\.$",
    r"^Threads started!$",
    r"^Done\.$",
    r"^Time limit exceeded, exiting\.\.\.$",
    r"^\(last message repeated \d+ times\)$",
    r"^Warming up for \d+ seconds\.\.\.$",
    r"^Creating files? (?:for the test\.\.\.|test_file\.\d+)$",
    r"^Removing test files\.\.\.$",
    r"^Creating table '\w+'\.\.\.$|^Inserting \d+ records into '\w+'$|^Creating a secondary index on '\w+'\.\.\.$",
    r"^WARNING: .*(?:deprecated|--\w)",
    r"^Number of unfinished transactions on forced shutdown: ",
    prompt(r"\S*sysbench"),
]
