"""Catalogs: signatures generated from the failure messages in emitters' own source code.

Development tooling beside `rules/` (like `evals/`), not part of the installed package. Each
emitter has a folder with `source.yaml` (pinned sources), `extract.py` (finds messages) and
`mapping.yaml` (the reviewed message -> class mapping); `catalogs.core` turns them into
`rules/<emitter>_cat/*.yaml` and `rules/<emitter>_cat/CATALOG.json`. See catalogs/README.md.
"""
