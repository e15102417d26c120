"""The cluster's entry points, above every component: the MiniCluster and the client.

* :mod:`.minicluster`: the :class:`~.minicluster.MiniCluster` (a Dispatcher, a
  ResourceManager and TaskManagers on a backend) and what it offers a notebook:
  :mod:`.checkpoints`, :mod:`.failures`, :mod:`.inspection`, :mod:`.taskmanagers` (the
  backends), :mod:`.limits` (sizes checked before anything starts), :mod:`.exit` (stopped at
  interpreter exit), :mod:`.job_client` (the JobClient of a submitted job).
* :mod:`.client`: what ``execute()`` runs: a job on the current cluster, or on a transient
  per-job cluster.
"""
