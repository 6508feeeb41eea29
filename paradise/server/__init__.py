"""PostgreSQL wire-protocol (v3) front door of paradise: ``paradise serve``.

A sans-IO core (:mod:`.pg.codec`, :mod:`.pg.session`, :mod:`.pg.query`) wrapped by a thin asyncio
shell (:mod:`.pg.asyncio_server`). Every statement goes to a :class:`QueryHandler` (the
pipeline) or is answered locally without data (SET, SHOW, catalog sandbox), or refused.
"""

from paradise.server.common.auth import hash_password as hash_password
from paradise.server.common.config import ServerConfig as ServerConfig
from paradise.server.common.config import load_config as load_config
from paradise.server.common.config import user_toml as user_toml
from paradise.server.common.handler import ColumnSpec as ColumnSpec
from paradise.server.common.handler import HandlerResult as HandlerResult
from paradise.server.common.handler import QueryHandler as QueryHandler
from paradise.server.common.handler import SchemaProvider as SchemaProvider
from paradise.server.pg.asyncio_server import PgServer as PgServer
from paradise.server.pg.asyncio_server import serve as serve

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
