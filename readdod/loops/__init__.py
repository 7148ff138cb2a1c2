"""The daemon's background loops, each built and started by :mod:`readdod.service.daemon`.

- :mod:`~readdod.loops.heartbeat`: renews the supervisor's leases, requeues expired ones;
- :mod:`~readdod.loops.retry`: queues failed items again when their retry is due;
- :mod:`~readdod.loops.auto_export`: exports an item the moment a run makes it READY;
- :mod:`~readdod.loops.retention`: prunes every item's old history once a day.
"""
