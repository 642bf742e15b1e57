"""The whitepaper: `build` (execute paper/whitepaper.ipynb, export), `sections` (every number from the data),
`pdf_export` (nbconvert exporter: Markdown -> pandoc -> Typst -> PDF).
"""
