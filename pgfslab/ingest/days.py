"""The same study on two days: two raw folders of one study -> one DuckDB, each day a host key.

A day is treated as the host merge (pgfslab.ingest.merge) treats a machine: the folders' resolved configs
must be one study (pgfslab.config.host_folders.check_one_study, refusing, with the differing keys named,
folders that are not), and each day's runs and targets carry the day's key in the `host` column, in the
order the days ran (`day1` for the folder whose first run started first, `day2` for the other; the study's
own folder is the later one as a rule, DAY2 being an earlier run) with run ids ending in `@day1` / `@day2`.
So every analysis that blocks by host blocks by day, and the exchangeability notebook says per comparison
whether the two days agree (pgfslab.analysis.stats.days). `source_file` keeps each file's real path under
data/raw/ (a day-2 folder outside data/raw/ is named by its folder's name, with its day appended where that is
the study's own folder's name: its server logs are then not found by the notebooks, which say so). Built next
to the target and renamed into place like every ingest.
"""

from __future__ import annotations

from pathlib import Path

from pgfslab import paths
from pgfslab.config.checks import validate
from pgfslab.config.host_folders import HostFolder, check_one_study, host_folders, read_config
from pgfslab.config.study import Study
from pgfslab.errors import LabError
from pgfslab.ingest.load import store_held
from pgfslab.ingest.published import EXTERNAL_DIR
from pgfslab.ingest.study import StudySummary, ingest_folder, new_study_database
from pgfslab.records import run_record

DAYS = ("day1", "day2")  # the host keys of the two days, in the order they ran


def first_start(folder: Path) -> str | None:
    """The earliest `started_at` of the folder's runs (ISO 8601 in UTC, so it sorts as text); None if none."""
    starts = []
    for rj in folder.glob("*/run.json"):
        try:
            started = run_record.read(rj)[0].started_at
        except LabError:
            continue
        if started:
            starts.append(str(started))
    return min(starts) if starts else None


def source_prefix(folder: Path) -> str:
    """A folder's path under data/raw/ (where the notebooks look for a run's server log), else its name."""
    raw = (paths.LAB / "data" / "raw").resolve()
    try:
        return str(folder.resolve().relative_to(raw))
    except ValueError:
        try:
            return str(folder.resolve().relative_to(Path("data/raw").resolve()))
        except ValueError:
            return folder.name


def day_folders(raw: Path, day2: Path) -> list[HostFolder]:
    """The two days' folders, checked to be one study run on one machine each."""
    if raw.resolve() == day2.resolve():
        raise LabError(f"DAY2={day2}: the study's own raw folder; give the raw folder of another day's run")
    for folder in (raw, day2):
        if not folder.is_dir():
            raise LabError(f"{folder}: no such raw folder")
    # keys in the order the days ran; the study's own folder stays first (its config is the database's)
    started = [first_start(raw), first_start(day2)]
    keys = DAYS[::-1] if None not in started and started[1] < started[0] else DAYS  # type: ignore[operator]
    out = []
    for key, folder in zip(keys, (raw, day2)):
        if host_folders(folder):
            raise LabError(
                f"{folder}: a study merged from several hosts' folders; a second day is taken for a study run on "
                "one machine (docs/two-days.md)"
            )
        out.append(HostFolder(key, folder, read_config(folder)))
    try:
        check_one_study(out)
    except LabError as exc:
        raise LabError(f"DAY2={day2}: not a raw folder of the same study as {raw}: {exc}") from None
    return out


def ingest_days(
    raw: Path, day2: Path, db_path: Path, *, progress: bool = True, external: Path | None = EXTERNAL_DIR
) -> StudySummary:
    """(Re)build one study database from the study's raw folder and another day's (`day1` the earlier of the
    two, `day2` the later), atomically."""
    folders = day_folders(raw, day2)
    common = Study.from_dict(validate(check_one_study(folders), str(raw / "study.yaml")))
    summary = StudySummary()
    named = ", ".join(f"{hf.host} {hf.folder}" for hf in sorted(folders, key=lambda hf: hf.host))
    config_yaml = f"# two days of one study: {named}\n"
    config_yaml += (raw / "study.yaml").read_text()
    prefixes = [source_prefix(hf.folder) for hf in folders]
    if prefixes[0] == prefixes[1]:
        # a day-2 folder outside data/raw/ named like the study's own (a kept copy of data/raw/<study>/): its files
        # would carry day 1's names, and a file ingested under a stored name replaces that file's rows (ingest.load)
        prefixes[1] = f"{prefixes[1]}@{folders[1].host}"
    with new_study_database(db_path, common, config_yaml, external, summary) as con:
        for hf, prefix in zip(folders, prefixes):
            ingest_folder(con, hf.folder, common.study, summary, progress=progress, host=hf.host, source_prefix=prefix)
        store_held(con)
    return summary
