"""The REST API: one module of routes per resource over the store and the engine, the token and
browser-session checks every route depends on, request bounds and read models."""
