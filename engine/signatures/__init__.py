"""The signature library: the schema of one signature, loading `rules/` (and overlays) into a
validated library, and compiling its patterns for the Hyperscan or `re` backend."""
