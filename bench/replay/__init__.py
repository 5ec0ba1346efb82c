"""Replay recorded agent sessions through ``context::assemble`` the way a harness drives it.

``python -m bench.replay`` prints, per session, budget and mode, how many calls were made, how
many input tokens were sent, how often the prompt-cache prefix was broken, how many calls
overflowed and how many were pruned, capped, compacted or had history dropped; with
``--economy`` what each mode is billed (``bench.kit.ledger``). ``python -m bench.replay harness``
drives the agent harness's turn loop (``bench.replay.harness``). The caller's round trip and the
harness loop are the kit's (``bench.kit.loop``); the generated sessions live in
``bench/kit/sessions/`` and are written by ``python -m bench.kit.generate``. Definitions: the
legends of ``bench.replay.tables``.
"""
