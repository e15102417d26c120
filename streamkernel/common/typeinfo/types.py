"""Types: PyFlink's factories for the type information of the common types."""

from __future__ import annotations

from typing import List

from streamkernel.common.typeinfo.basic import (
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    InstantTypeInfo,
    PickledBytesTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
)
from streamkernel.common.typeinfo.composite import (
    BasicArrayTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
)
from streamkernel.common.typeinfo.type_information import TypeInformation

__all__ = ["Types"]


class Types:
    """Factories for the type information of the most common types (PyFlink's ``Types``).

        >>> Types.ROW_NAMED(["word", "count"], [Types.STRING(), Types.INT()]).type_name
        'ROW<word STRING, count INT>'
    """

    @staticmethod
    def STRING() -> TypeInformation:
        """Type information for str. Supports None."""
        return BasicTypeInfo(BasicType.STRING)

    @staticmethod
    def BYTE() -> TypeInformation:
        """Type information for a byte (int)."""
        return BasicTypeInfo(BasicType.BYTE)

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        """Type information for bool."""
        return BasicTypeInfo(BasicType.BOOLEAN)

    @staticmethod
    def SHORT() -> TypeInformation:
        """Type information for a short (int)."""
        return BasicTypeInfo(BasicType.SHORT)

    @staticmethod
    def INT() -> TypeInformation:
        """Type information for a 32-bit int."""
        return BasicTypeInfo(BasicType.INT)

    @staticmethod
    def LONG() -> TypeInformation:
        """Type information for a 64-bit int."""
        return BasicTypeInfo(BasicType.LONG)

    @staticmethod
    def FLOAT() -> TypeInformation:
        """Type information for a 32-bit float."""
        return BasicTypeInfo(BasicType.FLOAT)

    @staticmethod
    def DOUBLE() -> TypeInformation:
        """Type information for float."""
        return BasicTypeInfo(BasicType.DOUBLE)

    @staticmethod
    def CHAR() -> TypeInformation:
        """Type information for a one-character str."""
        return BasicTypeInfo(BasicType.CHAR)

    @staticmethod
    def BIG_INT() -> TypeInformation:
        """Type information for an arbitrary-size int. Supports None."""
        return BasicTypeInfo(BasicType.BIG_INT)

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        """Type information for ``decimal.Decimal``. Supports None."""
        return BasicTypeInfo(BasicType.BIG_DEC)

    @staticmethod
    def INSTANT() -> TypeInformation:
        """Type information for :class:`~streamkernel.common.time.Instant`. Supports None."""
        return InstantTypeInfo(BasicType.INSTANT)

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        """Type information for ``datetime.date``. Supports None."""
        return DateTypeInfo()

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        """Type information for ``datetime.time``. Supports None."""
        return TimeTypeInfo()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        """Type information for ``datetime.datetime``. Supports None."""
        return TimestampTypeInfo()

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        """Type information for any picklable Python object."""
        return PickledBytesTypeInfo()

    @staticmethod
    def ROW(field_types: List[TypeInformation]) -> RowTypeInfo:
        """Type information for a Row with fields of the given types (named f0, f1, ...)."""
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(field_names: List[str], field_types: List[TypeInformation]) -> RowTypeInfo:
        """Type information for a Row with the given field names and types."""
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: List[TypeInformation]) -> TupleTypeInfo:
        """Type information for a tuple with fields of the given types."""
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """Type information for arrays of a primitive type (such as ``bytes`` for BYTE)."""
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """Type information for arrays of a boxed basic type."""
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """Type information for arrays of a non-primitive type; elements may be None."""
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        """Type information for dicts (used by MapStateDescriptor)."""
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        """Type information for lists of the given element type."""
        return ListTypeInfo(element_type_info)
