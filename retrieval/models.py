"""Retrieval has no Django models: its tables are owned as SQL (tables.py; each engine's DDL in engines/).

This module exists because Django sends post_migrate only to apps with a
models module, and apps.py relies on post_migrate to re-create the index
triggers after a table rebuild.
"""
