"""``streamkernel.util.exceptions`` has the exception classes of ``pyflink.util.exceptions``."""

from __future__ import annotations

import pickle

from streamkernel.errors import StreamKernelError

# pyflink.util.exceptions' exception classes in PyFlink 2.3 (read from the installed module).
PYFLINK_CLASSES = [
    "CatalogException", "DatabaseAlreadyExistException", "DatabaseNotEmptyException", "DatabaseNotExistException",
    "FunctionAlreadyExistException", "FunctionNotExistException", "JavaException", "ModelAlreadyExistException",
    "ModelNotExistException", "PartitionAlreadyExistsException", "PartitionNotExistException",
    "PartitionSpecInvalidException", "TableAlreadyExistException", "TableException", "TableNotExistException",
    "TableNotPartitionedException",
]


def test_a_pyflink_program_imports_the_exception_classes_with_the_prefix_changed() -> None:
    from streamkernel.util import exceptions
    from streamkernel.util.exceptions import JavaException, TableException  # noqa: F401 - as a program does

    for name in PYFLINK_CLASSES:
        cls = getattr(exceptions, name)
        assert issubclass(cls, exceptions.JavaException) and issubclass(cls, StreamKernelError), name
    assert sorted(exceptions.__all__) == sorted([*PYFLINK_CLASSES, "exception_mapping"])
    assert exceptions.exception_mapping["org.apache.flink.table.api.TableException"] is TableException


def test_a_java_exception_shows_its_stack_trace_and_survives_pickling() -> None:
    from streamkernel.util.exceptions import TableException

    error = TableException("Table 'orders' not found")
    assert str(error) == error.stack_trace == "Table 'orders' not found"
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is TableException and str(copy) == "Table 'orders' not found"
