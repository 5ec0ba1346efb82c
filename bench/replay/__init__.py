"""Replay recorded agent sessions through ``context::assemble`` the way a harness drives it.

``python -m bench.replay`` prints, per session, budget and mode, how many calls were made, how
many input tokens were sent, how often the prompt-cache prefix was broken, how many calls
overflowed and how many were pruned, capped, compacted or had history dropped. The sessions
live in ``bench/kit/sessions/`` and are written by ``python -m bench.kit.generate``.
"""
