"""Evaluation: how well denpex answers, measured on labelled cases. No product module imports it.

`corpus.py` the corpus and held-out evaluation (`denpex eval`), `render.py` its report,
`retrieval.py` retrieval on its own, `family_out.py` the hybrid path with whole families left
out, `learning.py` the learning curve of curation, `seed.py` the build of the shipped seed
history. The command line (the top layer) is its only importer.
"""
