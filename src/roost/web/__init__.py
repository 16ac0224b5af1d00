"""The web dashboard: a daemon the central manager's master starts (``WEB`` in
``DAEMON_LIST``, on in a personal pool) that shows the pool in a browser and
serves ``/metrics`` for Prometheus.

It reads the pool only through :mod:`roost.api`, as any tool does, and is no
part of the daemons: ``snapshot`` (reading and summarizing the pool),
``jobinfo`` (one job's ad, events and ``q -better-analyze``), ``metrics``
(Prometheus), ``server`` (HTTP, authentication of actions), ``daemon`` (the
process: configuration, address file, signals). See docs/web.md.
"""
