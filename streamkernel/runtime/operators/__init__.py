"""Operators: what each node of the StreamGraph runs, batch by batch, inside a Task."""
