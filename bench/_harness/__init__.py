"""What the benchmarks share: ``ksteward serve`` subprocesses (``server``), a thin wire client
(``wire``), CPU meters (``cpu``), closed-loop load (``load``), statistics, tables and the JSON result
document (``report``), the sections runner and ``main`` (``runner``), and tools used by more than one
benchmark: the client libraries (``clients``), the counting proxy (``proxy``), the in-process profiler
(``profile``), a strace-traced server (``strace``), the ACL layouts of Kafka's ``AuthorizerBenchmark``
(``acl_layout``) and snapshot building (``snapshot``).
"""
