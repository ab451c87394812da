"""Many devices in a host, many hosts: the links between them, collectives, and the cluster.

:mod:`.topology` (chip-to-chip ports and network interfaces, each a :class:`~.links.Link` with
bandwidth, latency and a booking ledger for contention), :mod:`.algorithms` (ring and tree
schedules of all-reduce, all-gather, reduce-scatter and send/recv as rounds of transfers),
:mod:`.rendezvous` (a collective's participants meeting on their devices' collective units),
:mod:`.communicator` (the API: ``comm = cluster.communicator(devices)``, ``comm.all_reduce(nbytes)``)
and :mod:`.cluster` (hosts, each a :class:`~accelview.capture.sim.Simulator`, on one true timeline).
"""
