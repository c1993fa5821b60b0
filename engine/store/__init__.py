"""The incident store: every diagnosis, the curation queue and the labels retrieval learns from.

SQLAlchemy 2.x over SQLite (a file, the default) or PostgreSQL (by URL); the schema is managed
by Alembic migrations shipped in this package and applied whenever a store is opened.
"""
