"""CompletableFuture: PyFlink's future for the asynchronous answers of a JobClient."""

from __future__ import annotations

import concurrent.futures
from typing import Any, Generic, TypeVar

__all__ = ["CompletableFuture"]

T = TypeVar("T")


class CompletableFuture(concurrent.futures.Future, Generic[T]):
    """A future that is completed explicitly, by whoever produces its value.

    A ``concurrent.futures.Future``, so ``result(timeout)``, ``exception(timeout)``,
    ``done()``, ``cancel()``, ``cancelled()`` and ``add_done_callback`` behave as in the
    standard library; when several threads complete it, only the first one wins.

        >>> CompletableFuture.completed_future(42).result()
        42
    """

    def complete(self, value: T) -> bool:
        """Completes the future with ``value`` unless it is already done; True if it was."""
        with self._condition:
            if self.done():  # the condition's lock is reentrant
                return False
            self.set_result(value)
            return True

    def complete_exceptionally(self, exception: BaseException) -> bool:
        """Completes the future with ``exception`` unless it is already done; True if it was."""
        with self._condition:
            if self.done():  # the condition's lock is reentrant
                return False
            self.set_exception(exception)
            return True

    @staticmethod
    def completed_future(value: Any) -> "CompletableFuture[Any]":
        """A future already completed with ``value``."""
        future: CompletableFuture[Any] = CompletableFuture()
        future.set_result(value)
        return future

    @staticmethod
    def failed_future(exception: BaseException) -> "CompletableFuture[Any]":
        """A future already completed with ``exception``."""
        future: CompletableFuture[Any] = CompletableFuture()
        future.set_exception(exception)
        return future
