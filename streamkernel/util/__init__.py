"""Utilities under PyFlink's module path ``pyflink.util`` (only :mod:`.exceptions`)."""
