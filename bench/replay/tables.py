"""The replay suite's tables: one row per session, budget and mode, and the economy table (one row per budget and mode, summed over the sessions, billed by ``bench.kit.ledger``); their legends state the definitions."""

from __future__ import annotations

from bench.kit import table
from bench.kit.ledger import ANTHROPIC_WRITE, CACHED_READ, Ledger
from bench.replay.replay import (
    MAX_OUTPUT_TOKENS,
    ReplayStats,
    Session,
)

COLUMNS = ("session", "rounds", "budget", "mode", "calls", "input tokens", "cache busts",
           "overflows", "pruned", "capped", "compacted", "dropped", "user probes", "path probes",
           "task kept", "task twice")


LEGEND = f"""\
Budgets: inline limits, context window 16000 / 32000 / 64000 / 128000 tokens, {MAX_OUTPUT_TOKENS} output tokens.
Modes: summariser = fake summariser, default configuration; none = no summariser;
none+drop_oldest = no summariser, overflow_fallback drop_oldest; original = fake summariser,
user_less_compaction false (the 1.1.6 selection); +anchor = anchor_messages 1; +check =
summary_check append; +extractive = summarizer_fallback extractive; harness = after a
compaction only the tail is sent (the anchor is not re-sent), lease_key = the session's name;
it knows no anchor, so its probes take the whole of what it sent before the tail as the head.
calls = assemble calls (one before each recorded assistant message); input tokens = sum of the
token_count of successful calls; cache busts = calls whose system prompt and messages do not
extend the previous successful call's; overflows = calls that failed with context/overflow;
pruned / capped / compacted / dropped = calls whose applied reports pruning, capped parts,
a compaction, dropped messages; user probes / path probes = over every compaction, the share of
the summarised head's user-message openings (first 100 characters) / file paths and URLs found in
the returned system prompt and messages (whitespace and case collapsed; - when no compaction had
any); task kept = share of calls whose returned context holds the first user message verbatim;
task twice = calls whose returned context holds it more than once."""


ECONOMY_COLUMNS = ("budget", "mode", "calls", "tokens sent", "prefix rewrites", "overflows",
                   "compactions", "prompt changed", "summariser calls", "summariser tokens",
                   "billed (auto cache)", "billed (Anthropic)")


ECONOMY_BUDGETS = ("16k", "32k", "64k")


ECONOMY_LEGEND = f"""\
Summed over the sessions. tokens sent = sum of token_count of successful calls; prefix rewrites =
calls whose system prompt and messages do not extend the previous successful call's;
overflows = calls that failed with context/overflow; compactions = calls reporting a compaction;
prompt changed = those whose returned system prompt is not the request's (rendered without a
summary); summariser calls / tokens = requests to the
summariser and their input plus output tokens (bytes / 4); billed = uncached-token equivalents:
auto cache = the repeated prefix at {CACHED_READ}, the rest at 1 (OpenAI, DeepSeek); Anthropic =
the repeated prefix read at {CACHED_READ}, the rest written at {ANTHROPIC_WRITE}; the summariser's
requests are priced as any request (none of their input is cached), its replies at 1.
Modes: -nopersist = the harness ignores the compaction round trip and resends its whole history;
+reuse = summary_reuse true; +reduce = reduce_to 0.6; +message = summary_placement message;
+eager = eager_compaction_at 0.8; +all = all four."""


def economy_rows(results: list[tuple[str, str, ReplayStats]]) -> list[tuple[str, ...]]:
    """One row per (budget, mode), in first-seen order, summed over sessions."""
    totals: dict[tuple[str, str], tuple[Ledger, list[int]]] = {}
    for budget, mode, stats in results:
        bill, counts = totals.setdefault((budget, mode), (Ledger(), [0, 0, 0, 0, 0]))
        bill.add(stats.bill)
        counts[0] += stats.calls
        counts[1] += stats.cache_busts
        counts[2] += stats.overflows
        counts[3] += stats.compacted
        counts[4] += stats.prompt_changed_at_compaction
    return [(budget, mode, f"{calls:,}", _millions(bill.sent), str(busts), str(overflows),
             str(compacted), str(changed), f"{bill.summarizer_calls:,}",
             _millions(bill.summarizer_tokens), _millions(bill.billed_automatic), _millions(bill.billed_anthropic))
            for (budget, mode), (bill, (calls, busts, overflows, compacted, changed)) in totals.items()]


def _millions(tokens: float) -> str:
    return f"{tokens / 1e6:.2f} M"


def row(session: Session, stats: ReplayStats) -> tuple[str, ...]:
    return (session.name, str(session.tool_rounds), stats.budget, stats.mode, str(stats.calls),
            f"{stats.input_tokens:,}", str(stats.cache_busts), str(stats.overflows), str(stats.pruned),
            str(stats.capped), str(stats.compacted), str(stats.dropped),
            _share(stats.probes.users.found, stats.probes.users.total),
            _share(stats.probes.paths.found, stats.probes.paths.total),
            _share(stats.task_kept, stats.calls), str(stats.task_repeated))


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def markdown(rows: list[tuple[str, ...]], columns: tuple[str, ...] = COLUMNS,
             text_columns: tuple[int, ...] = (0, 2, 3)) -> str:
    return table.markdown(rows, columns, text_columns)

