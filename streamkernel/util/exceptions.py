"""PyFlink's ``pyflink.util.exceptions``: the exception classes a PyFlink program may import.

In PyFlink these are the Python faces of Java exceptions (mostly of the Table API); the
DataStream API's misuse errors are not among them: PyFlink raises ``TypeError``,
``ValueError`` and ``AttributeError`` in Python, and a py4j ``Py4JJavaError`` for checks the
JVM makes. streamkernel raises its own :mod:`streamkernel.errors` classes there, each also
the built-in class PyFlink raises (a JVM check is an ``InvalidProgramError``, a
``ValueError``). The classes here exist so that a program importing them runs with the
``pyflink.`` prefix changed to ``streamkernel.``; they derive from
:class:`~streamkernel.errors.StreamKernelError`.
"""

from __future__ import annotations

from streamkernel.errors import StreamKernelError

__all__ = [
    "JavaException",
    "TableException",
    "CatalogException",
    "DatabaseAlreadyExistException",
    "DatabaseNotEmptyException",
    "DatabaseNotExistException",
    "FunctionAlreadyExistException",
    "FunctionNotExistException",
    "PartitionAlreadyExistsException",
    "PartitionNotExistException",
    "PartitionSpecInvalidException",
    "TableAlreadyExistException",
    "TableNotExistException",
    "ModelAlreadyExistException",
    "ModelNotExistException",
    "TableNotPartitionedException",
    "exception_mapping",
]


class JavaException(StreamKernelError):
    """PyFlink's base class of the Python faces of Java exceptions; ``str()`` is ``stack_trace``."""

    def __init__(self, stack_trace: str) -> None:
        super().__init__(stack_trace)
        self.stack_trace = stack_trace

    def __str__(self) -> str:
        return self.stack_trace


class TableException(JavaException):
    """General exception for all errors during table handling."""


class CatalogException(JavaException):
    """A catalog-related exception."""


class DatabaseAlreadyExistException(JavaException):
    """Trying to create a database that already exists."""


class DatabaseNotEmptyException(JavaException):
    """Trying to drop a database that is not empty."""


class DatabaseNotExistException(JavaException):
    """Trying to operate on a database that does not exist."""


class FunctionAlreadyExistException(JavaException):
    """Trying to create a function that already exists."""


class FunctionNotExistException(JavaException):
    """Trying to operate on a function that does not exist."""


class PartitionAlreadyExistsException(JavaException):
    """Trying to create a partition that already exists."""


class PartitionNotExistException(JavaException):
    """Operating on a partition that does not exist."""


class PartitionSpecInvalidException(JavaException):
    """A PartitionSpec that does not match the table's partition keys."""


class TableAlreadyExistException(JavaException):
    """Trying to create a table (or view) that already exists."""


class TableNotExistException(JavaException):
    """Trying to operate on a table (or view) that does not exist."""


class ModelAlreadyExistException(JavaException):
    """Trying to create a model that already exists."""


class ModelNotExistException(JavaException):
    """Trying to operate on a model that does not exist."""


class TableNotPartitionedException(JavaException):
    """Trying to operate on partitions of a non-partitioned table."""


#: Java exception class name -> its Python class, as in PyFlink.
exception_mapping: dict[str, type[JavaException]] = {
    "org.apache.flink.table.api.TableException": TableException,
    "org.apache.flink.table.catalog.exceptions.CatalogException": CatalogException,
    "org.apache.flink.table.catalog.exceptions.DatabaseAlreadyExistException": DatabaseAlreadyExistException,
    "org.apache.flink.table.catalog.exceptions.DatabaseNotEmptyException": DatabaseNotEmptyException,
    "org.apache.flink.table.catalog.exceptions.DatabaseNotExistException": DatabaseNotExistException,
    "org.apache.flink.table.catalog.exceptions.FunctionAlreadyExistException": FunctionAlreadyExistException,
    "org.apache.flink.table.catalog.exceptions.FunctionNotExistException": FunctionNotExistException,
    "org.apache.flink.table.catalog.exceptions.PartitionAlreadyExistsException": PartitionAlreadyExistsException,
    "org.apache.flink.table.catalog.exceptions.PartitionNotExistException": PartitionNotExistException,
    "org.apache.flink.table.catalog.exceptions.PartitionSpecInvalidException": PartitionSpecInvalidException,
    "org.apache.flink.table.catalog.exceptions.TableAlreadyExistException": TableAlreadyExistException,
    "org.apache.flink.table.catalog.exceptions.TableNotExistException": TableNotExistException,
    "org.apache.flink.table.catalog.exceptions.TableNotPartitionedException": TableNotPartitionedException,
    "org.apache.flink.table.catalog.exceptions.ModelAlreadyExistException": ModelAlreadyExistException,
    "org.apache.flink.table.catalog.exceptions.ModelNotExistException": ModelNotExistException,
}
