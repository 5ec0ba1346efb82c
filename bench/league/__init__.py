"""The league table: the worker's own modes against the context strategies agent teams ship.

``python -m bench.league`` replays recorded sessions (``bench/kit/sessions`` by default, any
folder with ``--data``) call by call, as ``bench.replay`` does: before each recorded assistant
message the harness holds the history recorded so far and sends a context to the model. Each
strategy decides what is sent:

* a **worker mode** sends the history it holds through ``context::assemble`` (the handler, called
  as a library caller would) and keeps the round trip (``applied.summary`` as the next calls'
  ``previous_summary``, its own messages from ``applied.tail_start_index`` on) when the mode
  persists it (``bench.league.modes``);
* a **peer** is a simulation of a published policy (``bench.kit.peers``; each one's parameters
  and sources are in its docstring) that builds the context itself. Where the peer summarises it
  calls the same deterministic summariser as the worker modes (``bench.kit.summariser``);
  where the peer has a last line of defence against an over-long request, that defence is
  ``context::assemble`` with the default configuration and no summariser.

Definitions (every count is the heuristic's, bytes / 4, as the worker's default estimator):

* **calls**: assistant messages of the recordings (one model call each); **overflows**: calls that
  could not be sent — a worker mode's ``context/overflow`` error, a peer's context over
  ``context_window - max_output_tokens`` (after its defence, when it has one);
* **tokens sent**: the counted size of every context sent; **prefix rewrites**: sent calls whose
  system prompt and messages do not extend the previous sent call's;
* **cache hit rate**: cached input / input, the cached input of a call being the part of it that
  repeats the previous sent context from its start (``bench.kit.ledger``), summariser requests
  included (a summariser request that continues the conversation it summarises, as Claude Code's,
  Codex's and Anthropic's server-side compaction do, reads that conversation from the cache;
  every other summariser request is uncached);
* **billed input** in uncached-token equivalents, automatic caching (OpenAI, DeepSeek) and
  Anthropic's: the formula of ``bench.kit.ledger``, the one cost model of the suites;
* **summariser calls / input**: requests to the summariser and their input tokens;
* **long-range recall**: ``bench.league.recall``.
"""
