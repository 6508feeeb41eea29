"""The PostgreSQL wire protocol (v3): a sans-IO codec and session, and their asyncio shell."""
