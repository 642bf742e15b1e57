"""Tables set for their page: a column of sentences set under its table as numbered notes (report.markdown_table),
a table of sentences as a list of entries, the source at the end of the caption, and what a seed said in its first
words for the table at a glance."""

from __future__ import annotations

import polars as pl

from pgfslab.analysis import report
from pgfslab.analysis.verdicts.table import first_words
from pgfslab.paper.context import with_source

LONG = "reads competed with writes for the emulated disk's one head: writes held it 18 % of the runs"
OTHER = "not steady: 3 of 5 runs of side B found no steady state (MSER-5), flagged 12 % of the time"


def test_long_entries_of_a_notes_column_are_numbered_under_the_table_once_each() -> None:
    df = pl.DataFrame({"cell": ["a", "b", "c", "d"], "notes": [LONG, "–", OTHER, LONG], "other": [LONG] * 4})
    md = report.markdown_table(df, caption="Cells.", notes=("notes",))
    table, caption, notes = md.split("\n\n")
    rows = [r.split(" | ")[1] for r in table.splitlines()[2:]]
    assert rows == ["note 1", "–", "note 2", "note 1"]  # a short entry stays; the same text, the same note
    assert caption == "Table: Cells."
    assert notes.splitlines() == [f"1. {LONG}", f"2. {OTHER}"]
    assert table.count(LONG) == 4  # a column not named in `notes` keeps its text


def test_a_table_without_long_notes_has_nothing_under_it() -> None:
    df = pl.DataFrame({"cell": ["a"], "notes": ["short"]})
    assert report.markdown_table(df, caption="C.", notes=("notes",)).endswith("Table: C.")


def test_the_source_ends_the_caption_not_the_notes() -> None:
    df = pl.DataFrame({"cell": ["a"], "notes": [LONG]})
    md = with_source(report.markdown_table(df, caption="Cells.", notes=("notes",)), " *Source: x.*")
    assert md.split("\n\n")[1:] == ["Table: Cells. *Source: x.*", f"1. {LONG}"]
    assert with_source("| a |\n|--|\n| 1 |\n\nTable: T.", " S.").endswith("Table: T. S.")


def test_a_table_of_sentences_as_entries() -> None:
    df = pl.DataFrame({"claim": ["s1", "s2"], "finding": ["it holds", None], "cells": [2, 1]})
    assert report.markdown_entries(df, "claim").splitlines() == [
        "- **s1**: *finding:* it holds; *cells:* 2",
        "- **s2**: *finding:* –; *cells:* 1",
    ]


def test_what_the_seed_said_in_its_first_words() -> None:
    said = "crossover where db size ~ free memory for page cache (32 GB RAM, shared_buffers 500 MB); figure only"
    assert first_words(said) == "crossover where db size ~ free memory for page cache"
    # a semicolon inside an aside does not end the first clause
    said = "16,026.9 tps (off; -c 100, lat 6.24 ms) vs 252.9 tps (on; -c 50) = 63.4x; NB client counts differ"
    assert first_words(said) == "16,026.9 tps vs 252.9 tps = 63.4x"
    assert first_words("figure only ('supports the hypothesis (fsync)'); our reading: less") == "figure only"
    assert first_words("2.43 / 1.23 = 1.98x (table). Conclusion says 2.5x") == "2.43 / 1.23 = 1.98x"
    long = "word " * 40
    cut = first_words(long, most=30)
    assert cut == "word word word word word …" and len(cut) <= 30
    assert first_words("(only an aside)") == "(only an aside)"  # nothing left: said as it is


def test_a_wide_table_of_few_rows_on_its_side() -> None:
    df = pl.DataFrame({"target": ["ext4", "btrfs"], "fs": ["ext4", "btrfs"], "ratio": [None, 4.9349], "n": [1, 2000]})
    t = report.transposed(df, "target", digits={"ratio": 2})
    assert t.columns == ["target", "ext4", "btrfs"]
    assert t.rows() == [("fs", "ext4", "btrfs"), ("ratio", "–", "4.93"), ("n", "1", "2,000")]


def test_a_key_that_repeats_or_too_many_rows_stay_as_they_are() -> None:
    df = pl.DataFrame({"target": ["ext4", "ext4"], "fs": ["ext4", "ext4"]})
    assert report.transposed(df, "target") is df  # two hosts' targets of one name cannot be two columns
    many = pl.DataFrame({"target": [f"t{i}" for i in range(7)], "fs": ["ext4"] * 7})
    assert report.transposed(many, "target") is many
    assert report.transposed(many, "target", most=7).columns == ["target", *many["target"]]


def test_two_numbers_in_one_cell() -> None:
    df = pl.DataFrame({"lo": [186.5, None], "hi": [1871.3, 2.0], "n": [19, 3], "m": [14, None]})
    out = df.select(report.pair_expr("lo", "hi", brackets=True).alias("ci"), report.pair_expr("n", "m").alias("counts"))
    assert out.rows() == [("[186.5, 1,871]", "19 / 14"), ("[–, 2.0]", "3 / –")]
