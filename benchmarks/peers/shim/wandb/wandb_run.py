class Run:
    """Type-annotation target only (see the package docstring)."""
