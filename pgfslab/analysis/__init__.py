"""What the notebooks call: `registry` (which notebooks a study runs), `notebook` (their set-up), `queries`
(SQL against the study database), `stats/`, `answers/` (what each notebook computes, one module per
notebook, named for what it answers), `charts`, `report` (Markdown tables, the paper's record of each
notebook), `execute` (one notebook with papermill, kernel in notebooks/).
"""
