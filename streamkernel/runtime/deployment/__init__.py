"""Where a job's cluster lives besides the notebook's kernel: application mode on Spark
(:mod:`.spark_application`, the client; :mod:`.spark_application_driver`, the driver side)."""
