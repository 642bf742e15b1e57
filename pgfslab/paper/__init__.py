"""The whitepaper: `build` (execute paper/whitepaper.ipynb, export), one module per section, each computing
every number from the data (`abstract`, `testbed` (the setup section), `methodology`, `results`, `durability`,
`threats`, `appendix`; `device_baseline`, `wal` and `hosts` add their parts to those), what they share in
`context`, and `pdf_export` (nbconvert exporter: Markdown -> pandoc -> Typst -> PDF).
"""
