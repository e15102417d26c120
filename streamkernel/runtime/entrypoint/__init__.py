"""The standalone session cluster's processes, as Flink's ``bin/start-cluster.sh`` starts them.

* :mod:`.cluster_entrypoint`: the JobManager process (Flink's StandaloneSessionClusterEntrypoint):
  the same Dispatcher / ResourceManager / JobMaster / REST code as the in-kernel MiniCluster;
* :mod:`.taskmanager_runner`: one TaskManager process (Flink's TaskManagerRunner) that
  registers with a running JobManager;
* :mod:`.cluster_dir`: the cluster's directory (``log/``, pid files, the secret), with
  :mod:`.directory_lock` (one JobManager per directory, one number per TaskManager);
* :mod:`.commands` (with :mod:`.jobmanager_rest`) and :mod:`.cli`: ``streamkernel cluster|jobmanager|taskmanager
  start|stop|status``.

Nothing here is imported by ``import streamkernel``.
"""
