"""Jinja2 prompt templates for the best-effort LLM step."""
