import ksteward_nonexistent_dependency  # noqa: F401
