"""Alembic environment of MarginLab's schema, run by ``storage.migrations`` (never from the command line).

The caller hands over a connection that is already inside its transaction
(``config.attributes["connection"]``): every migration of one upgrade runs
in that transaction and is committed or rolled back with it.
"""

from alembic import context

from storage.models import Base

connection = context.config.attributes.get("connection")
if connection is None or context.is_offline_mode():
    raise RuntimeError("MarginLab's migrations run through storage.init_db, on a live connection.")

context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True, compare_type=True)
with context.begin_transaction():
    context.run_migrations()
