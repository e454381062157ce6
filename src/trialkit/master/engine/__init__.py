"""Trial and experiment state: the pure lifecycles and policies, their one writer (transitions),
who runs next (scheduling) and the engine that ties them to processes and the searcher."""
