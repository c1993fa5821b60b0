"""The hybrid path: best-effort answers from similar incidents and an LLM, queued for curators.

Runs only when an incident store is configured. `path.HybridPath` is what the CLI builds and
the pipeline calls; everything heavy (embedding model, faiss, litellm) loads lazily inside it.
"""
