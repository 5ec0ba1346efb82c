"""What the suites share, and nothing else.

* ``sessions``: the recorded and generated sessions (loading; ``generate`` and ``tool_output``
  write the generated ones into ``sessions/``);
* ``workloads``: the seeded speed workloads W1–W5 and the request helpers (``shifted``, ``grown``);
* ``inproc``: one in-process call, bytes in and bytes out, and the worker's turn on a frame;
* ``measure``: clocks (wall or process CPU, ``BENCH_CLOCK``), summaries, peak RSS;
* ``modes``: the worker modes and budgets the replayed suites run;
* ``loop``: the one agent-loop driver (the caller's round trip and the harness's turn loop);
* ``ledger``: the one cost model (what was sent, cached, rewritten and billed);
* ``summariser``: the deterministic summarisers; ``peers`` and ``peer_summaries``: the simulated
  peers; ``recall`` and ``entities``: the long-range recall measure;
* ``table``: Markdown tables; ``cli``: a suite's command line.
"""
