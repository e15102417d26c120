"""State backends: where keyed state and operator state live while a job runs."""
