"""The Dispatcher: accepts jobs and starts a JobMaster for each (Flink's session mode).

* :mod:`.dispatcher`: the :class:`~.dispatcher.Dispatcher` itself.
* :mod:`.gateway`: the DispatcherGateway, all that clients (``execute()``, the magics, the
  cockpit, the REST handlers) may ask of it.
"""
