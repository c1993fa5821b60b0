"""The signature library: one YAML file per signature, a folder per family."""
