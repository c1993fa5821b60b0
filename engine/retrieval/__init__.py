"""Retrieval of similar past incidents."""
