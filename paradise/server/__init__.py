"""PostgreSQL wire-protocol (v3) front door of paradise: ``paradise serve``.

A sans-IO core (:mod:`.codec`, :mod:`.session`, :mod:`.query`) wrapped by a thin asyncio
shell (:mod:`.asyncio_server`). Every statement goes to a :class:`QueryHandler` (the
pipeline) or is answered locally without data (SET, SHOW, catalog sandbox), or refused.
"""

from paradise.server.asyncio_server import PgServer as PgServer
from paradise.server.asyncio_server import serve as serve
from paradise.server.auth import hash_password as hash_password
from paradise.server.config import ServerConfig as ServerConfig
from paradise.server.config import load_config as load_config
from paradise.server.config import user_toml as user_toml
from paradise.server.handler import ColumnSpec as ColumnSpec
from paradise.server.handler import HandlerResult as HandlerResult
from paradise.server.handler import QueryHandler as QueryHandler
from paradise.server.handler import SchemaProvider as SchemaProvider

__all__ = [
    "ColumnSpec",
    "HandlerResult",
    "PgServer",
    "QueryHandler",
    "SchemaProvider",
    "ServerConfig",
    "hash_password",
    "load_config",
    "serve",
    "user_toml",
]
