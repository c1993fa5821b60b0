"""Matching: inputs scanned with the compiled signature library into matches on events."""
