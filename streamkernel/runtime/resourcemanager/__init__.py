"""The ResourceManager: the registry of every TaskManager's task slots, handed to jobs.

* :mod:`.resource_manager`: the :class:`~.resource_manager.ResourceManager` itself.
* :mod:`.gateway`: the ResourceManagerGateway; :mod:`.proxy`: the same over RPC.
* :mod:`.remote_taskmanagers`: the resource-manager driver for TaskManagers in other
  processes (RPC listener, registration, loss, replacement, stop) around a launcher
  (:mod:`streamkernel.runtime.taskmanager.process` or :mod:`streamkernel.runtime.taskmanager.spark`).
"""
