"""The emulated ``pg_catalog`` / ``information_schema``.

A closed grammar over a per-login sandbox that holds only what the role may see.
"""
