"""The Dispatcher: accepts jobs and starts a JobMaster for each (Flink's session mode)."""
