"""The REST handlers, one module per resource family, each exporting ``ROUTES``: a list of
(Flink path template such as ``/jobs/:jobid``, handler class). :mod:`.base` is their base
class (JSON out, Flink's error bodies, the body-size check, the :class:`RestContext`).

A module may also export ``RAW_ROUTES`` (tornado rules added as they are, after every API
route, without the ``/v1`` prefix: static files). :mod:`..routes` lists the modules.
"""
