"""Remote calls between the JobManager and TaskManagers in other processes (``process`` and ``spark`` backends)."""
