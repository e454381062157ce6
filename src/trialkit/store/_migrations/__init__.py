"""The store's Alembic migration environment (``env.py``, ``versions/``), run by ``.._schema``.

To change the schema: edit ``.._models`` and add ``versions/rNNNN_<what>.py`` by hand with
``revision = "NNNN"`` and ``down_revision`` the previous head; tests/unit/store/test_migrations.py
checks that the migrated schema equals the models.
"""
