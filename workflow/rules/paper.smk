# Stage 4: the whitepaper. paper/whitepaper.ipynb is executed with papermill against the study
# database and every executed analysis notebook's figures, tables and publication record
# (build/<study>/tables/<name>.json, see analyse.smk), then exported by nbconvert (PDF via Typst).


rule paper:
    input:
        db="data/{study}.duckdb",
        source=str(paths.PAPER_SOURCE),
        code=CODE["paper"],
        notebooks=lambda w: analysis_outputs(w.study),
    output:
        pdf="paper/{study}.pdf",
        html="paper/{study}.html",
        nb="build/{study}/paper.ipynb",
    log:
        "build/{study}/logs/paper.log",
    shell:
        "{PY} -m pgfslab paper --db {input.db} --study {wildcards.study} --source {input.source}"
        " --executed {output.nb} --pdf {output.pdf} --html {output.html} > {log} 2>&1"
        " || {{ tail -30 {log} >&2; exit 1; }}"
