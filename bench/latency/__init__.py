"""How long the agent waits for a summariser: a replay on a simulated clock (``python -m bench.latency``).

Each recorded session is replayed once per mode, one model call per recorded assistant message, and
every call is placed on a **simulated clock** (seconds; no real time is measured, so the numbers
are deterministic):

* the session starts at 0 with its first model call;
* a call **waits** for a summariser: it is answered ``wait`` seconds after it was made, where
  ``wait`` = L × the summariser calls the call made, one after the other (L =
  ``--summarizer-latency``, default 5, 30 and 120 s);
* after its answer, the **agent's step** (the model's reply and the tools it runs) takes the step
  time before the next call is made. The **step time source**: a session whose source recorded
  the times of its messages (mini-swe-agent, OpenHands: ``SOURCES.md`` of the real sessions) takes
  its own time between model calls, step k = timestamp of recorded assistant message k + 1 −
  timestamp of assistant message k (never below 0); a session whose times were synthesised (every
  message exactly 1,000 ms after the one before it, as ``SOURCES.md`` writes them for tau-bench,
  SWE-agent and Aider) or that has no timestamps takes the stated step time,
  :data:`~bench.latency.clock.DEFAULT_STEP_SECONDS` = 10 s (``--step-time``). The last call's
  step is 0 (the session ends with its reply);
* the **session time** is the sum of the steps and the waits; **waiting share** = total wait /
  session time.

Modes:

* **worker** (``bench.latency.worker``): the iii agent harness's turn loop, the kit's driver
  (``bench.kit.loop.HarnessLoop``) over the worker's handlers in this process, the session's own
  system prompt (no session id line), the kit's request overhead (65 tokens), no pre-generate
  hook unless ``--guidance-hook`` runs the kit's (``GuidanceHook``: its re-assemblies are calls of
  the same turn, so their summariser calls add to the turn's wait, and what it appends is sent and
  billed); the model is resolved through a router stand-in that answers every model with
  ``--window`` / ``--max-output``. One worker per session and mode: the kit's deterministic
  summariser (``bench.kit.summariser.RecordingSummarizer``, as the worker's summariser port: a
  request in conversation form is billed on that form, its prefix cached against the context sent
  last before it, the previous call's for a call's own request and the starting call's for a
  job's), no lease store, a fresh session store, message memo and ledger of sent contexts. The
  summariser the worker calls is awaited on
  the call's own event loop; a summariser call made while ``context::assemble`` runs for the turn
  (the caller is waiting for the answer) is a call **in the call**; any other (a job the worker
  runs off the call, on another thread or after answering) is **off the turn** and waits for
  nothing. Configurations: ``profile: recommended`` (every compaction inline), and the same with
  ``compact_ahead_at: 0.8``, its jobs run by the suite's runner on the simulated clock
  (``bench.latency.jobs``: a job runs once the call that started it is answered, off the turn,
  and its summary is readable from that answer's time + L × the job's summariser calls; this
  mode is replayed once per L). A configuration the worker refuses is a row that says
  ``n/a (key not supported)``.
* **peers** (``bench.latency.peers``): the league's simulations of the policies agent teams ship
  (``bench.kit.peers``: parameters and sources in each docstring), replayed as ``bench.league``
  replays them, with the same last line of defence (``context::assemble``, ``drop_oldest``, no
  summariser) where the peer has one. Every peer blocks: a call waits L for each summariser
  request its policy makes at that call (one per compaction).

Columns, per mode and L, summed over the sessions:

* **calls**: model calls (recorded assistant messages); **waited**: calls whose wait is above 0;
* **total wait**: the sum of the waits; **p99 wait**: the nearest-rank 99th percentile of the
  waits of every call (a call that waited for nothing counts as 0), ``bench.kit.measure``;
  **max wait**: the longest;
* **overflows**: calls that could not be sent — the worker's ``context/overflow`` answer or an
  answer over ``usable`` (the harness fails the turn), a peer's context over ``window − max
  output`` after its defence;
* **long-range recall** (``bench.kit.recall``, the recall and league suites' definition): over
  the pressure calls (the calls before which the raw history exceeds the worker's default
  ``usable``), the entities the next 10 recorded messages mention that the history before the
  last 20 messages holds, those 20 messages and the system prompt do not; recall = the share of
  them the context sent holds (an overflow holds none);
* **billed** (``bench.kit.ledger``, the one cost model of the suites): uncached-token equivalents
  with automatic caching, the prefix a call repeats from the previous sent context at 0.1, the rest
  of every request (the summariser's included) at 1, the summariser's replies at 1; counts are the
  worker's default estimator, bytes / 4;
* **prefix rewrites**: sent calls whose system prompt and messages do not extend the previous
  sent call's (``bench.kit.ledger``);
* **summariser calls**: in the call / off the turn (peers: every request is in the call).

The clock is bench code: the worker is never told the simulated time (its own clock is the system
clock), and the summariser answers at once in real time; only the bench's clock moves by L. A job
the worker ran off the turn is therefore counted, not timed: when it is ready is not simulated.
"""
