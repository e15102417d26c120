"""The notebook cockpit: live views of the cluster and its jobs.

* :mod:`.history`: the last minute of every subtask's counters (rates, sparklines);
* :mod:`.models`: what is shown, as plain data computed from a cluster snapshot;
* :mod:`.html` and :mod:`.text`: the two renderers of the models (HTML for notebooks and
  widgets, plain text for terminals);
* :mod:`.cockpit`: the ipywidgets (cluster view, job dashboard with its buttons);
* :mod:`.refresher`: the background thread that redraws them a few times a second.

The runtime never imports this package: the views read :meth:`MiniCluster.inspection.snapshot`.
"""
