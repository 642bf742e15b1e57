"""What the notebooks call: `registry` (which notebooks a study runs), `notebook` (their set-up), `queries`
(SQL against the study database), `stats/`, `charts`, `report` (Markdown tables, the paper's record of each
notebook), `execute` (one notebook with papermill, kernel in notebooks/).
"""
