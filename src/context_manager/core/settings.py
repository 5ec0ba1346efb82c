"""The worker configuration record: every key, declared once (spec 04 §2.1).

Each field is one key: its type, its default and, through ``declare``, its decoder and schema
type, the schema's description, its text in ``config.example.yaml`` and what each profile implies
for it. The parser, the registered schema, the manifest, the example file and the console form are
derived from these fields (``CONFIG_KEYS``); adding a key means adding one field here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from context_manager.core.keys import (
    BOOLEAN,
    FRACTION,
    FRACTION_OR_NULL,
    MODEL_OR_NULL,
    NAME_LIST,
    POSITIVE_U64,
    POSITIVE_U64_OR_NULL,
    RETENTION_POLICY,
    STRING,
    STRING_OR_NULL,
    U64,
    USIZE,
    Implied,
    KeyTable,
    Section,
    choice,
    declare,
)
from context_manager.core.retention_policy import RetentionPolicy

# The accepted values of the enumerated keys; their declarations list them from here.
OverflowFallback = Literal["error", "drop_oldest"]
EstimatorName = Literal["heuristic", "auto", "router"]
SummaryCheck = Literal["off", "append"]
SummarizerFallback = Literal["none", "extractive"]
SummaryPlacement = Literal["system_prompt", "message"]
SummarizerRequestForm = Literal["rendered", "conversation"]
CountCalibration = Literal["off", "usage"]
LeaseStoreName = Literal["file", "state"]
SessionStoreName = Literal["memory", "state"]
ProfileName = Literal["faithful", "recommended"]
# The plan and todo functions of common agent harnesses (docs/working-set.md, "The plan").
PLAN_FUNCTIONS: tuple[str, ...] = ("TodoWrite", "update_plan", "write_todos", "task_tracker", "todo_write")


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model named in the configuration (``summarizer_model``): its id and, optionally, provider."""

    id: str
    provider: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id} if self.provider is None else {"id": self.id, "provider": self.provider}


# The first 13 keys are the 1.1.6 record. The documented additions after them keep the original's
# behaviour by default, except `user_less_compaction` (see README "Behaviour beyond 1.1.6").
# "faithful" implies nothing: the original's behaviour. "recommended" is the combination the league
# table (BENCHMARKS.md, "The recommended profile") measured best, with a summariser and without one.
@dataclass(frozen=True, slots=True)
class WorkerConfig:
    reserved_tokens_cap: int = declare(
        20000, U64, section=Section.BUDGET,
        description="Upper bound of the default reserve once the percentage is applied, in tokens.",
        example="Ceiling of the default reserve, in tokens: reserve = min(this, context_window * reserved_pct / 100).",
    )
    reserved_pct: int = declare(
        10, U64, section=Section.BUDGET,
        description="Percentage of the context window held back by default for the model's output.",
        example="Percentage of the context window held back by default for the model's output (not capped at 100).",
    )
    tail_turns: int = declare(
        2, USIZE, section=Section.PRUNING,
        description="Recent turns kept verbatim by compaction.",
        example="Recent turns kept verbatim by compaction (every user message starts a turn); 0 summarises everything.",
    )
    protect_recent_tokens: int = declare(
        40000, U64, section=Section.PRUNING,
        description=(
            "Tokens of the newest function outputs that normal pruning leaves alone; 0 turns the "
            "window off."
        ),
        example="Tokens of the newest function outputs that normal pruning leaves alone; 0 turns the window off.",
    )
    decay_user_turns: int = declare(
        0, USIZE, section=Section.PRUNING,
        description=(
            "A function output becomes prunable after this many later real user turns; 0 turns "
            "age-based pruning off."
        ),
        example=(
            "An output becomes prunable after this many later real user turns, whatever its size; "
            "0 turns decay off."
        ),
    )
    protected_user_turns: int = declare(
        2, USIZE, section=Section.PRUNING,
        description=(
            "Outputs of this many most recent real user turns are never pruned; 0 turns the "
            "exemption off."
        ),
        example=(
            "Pruning never touches the outputs of this many most recent real user turns; "
            "0 turns the exemption off."
        ),
    )
    min_free_tokens: int = declare(
        20000, U64, section=Section.PRUNING,
        description="Normal pruning changes nothing unless it frees at least this many tokens.",
        example="Normal pruning changes nothing unless it frees at least this many tokens.",
    )
    max_output_chars: int = declare(
        2000, USIZE, section=Section.PRUNING,
        description=(
            "Size in bytes above which a function output counts as verbose for pruning; also the "
            "truncation threshold of result text in the summariser input."
        ),
        example=(
            "Size in bytes above which a function output counts as verbose (prunable at once); also the length\n"
            "above which result text is truncated in the summariser's input."
        ),
    )
    max_result_tokens: int = declare(
        20000, U64, section=Section.PRUNING,
        description="Per-result token ceiling of context::assemble's cap pass; 0 turns the cap off.",
        example="Per-result token ceiling of context::assemble's cap pass; 0 turns the cap off.",
    )
    lease_ttl_secs: int = declare(
        300, U64, section=Section.RUNTIME,
        description="How long a compaction lease is honoured, in seconds.",
        example="How long a compaction lease is honoured, in seconds; it also bounds the summarisation deadline.",
    )
    allow_fallback_limits: bool = declare(
        True, BOOLEAN, section=Section.BUDGET,
        description=(
            "Use conservative 8192/1024 limits when a model cannot be resolved; when false the call "
            "fails with context/model_unresolved."
        ),
        example=(
            "When a model cannot be resolved (not inline, router absent or model unknown): true uses the\n"
            "conservative 8192 / 1024 limits, false fails the call with context/model_unresolved."
        ),
    )
    summarizer_timeout_ms: int = declare(
        320000, U64, section=Section.RUNTIME,
        description="Longest a single summariser request through router::chat may take, in milliseconds.",
        example="Longest a single summariser request through router::chat may take, in milliseconds.",
    )
    lease_dir: str = declare(
        'data/context-manager', STRING, section=Section.RUNTIME,
        description=(
            "Directory of the compaction lease files; relative paths are taken from III_COMPOSE_DIR "
            "(else the working directory) and a leading ~/ means the home directory."
        ),
        example=(
            "Directory of the compaction lease files. Relative paths are taken from III_COMPOSE_DIR (else the\n"
            "working directory); a leading ~/ means the home directory; absolute paths are used as they are."
        ),
    )
    overflow_fallback: OverflowFallback = declare(
        "error", choice(OverflowFallback), section=Section.ADDITIONS,
        description=(
            'What context::assemble does when nothing else fits: "error" fails with context/overflow;'
            ' "drop_oldest" drops the oldest messages and reports them.'
        ),
        example=(
            'What context::assemble does where 1.1.6 fails with context/overflow: "error" keeps that failure;\n'
            '"drop_oldest" drops the oldest messages instead and reports them in applied.dropped_messages and\n'
            "applied.dropped_ranges."
        ),
        implied=(Implied("recommended", "drop_oldest", place=4),),
    )
    estimator: EstimatorName = declare(
        "heuristic", choice(EstimatorName), section=Section.ADDITIONS,
        description=(
            'Token estimator: "heuristic" counts every model with the byte heuristic; "auto" counts '
            'OpenAI model families with their tokenizer and prices images at their provider; "router"'
            " asks llm-router's router::count_tokens for the provider's exact count and falls back to"
            ' the "auto" count when it cannot answer.'
        ),
        example=(
            'Token estimator: "heuristic" gives the 1.1.6 counts for every model; "auto" counts OpenAI model\n'
            'families with their tokenizer and images at their provider\'s price; "router" asks llm-router\'s\n'
            'router::count_tokens for the provider\'s exact count (2 s timeout) and falls back to "auto".'
        ),
    )
    user_less_compaction: bool = declare(
        True, BOOLEAN, section=Section.ADDITIONS,
        description=(
            "Let a history without any user message compact by assistant rounds; false keeps such a "
            "history uncompactable."
        ),
        example=(
            "true: a window without any user message compacts by assistant rounds; false restores the 1.1.6\n"
            "behaviour for such histories."
        ),
    )
    anchor_messages: int = declare(
        0, USIZE, section=Section.ADDITIONS,
        description=(
            "The first N model-facing messages of every context::assemble call are pinned: no pass "
            "changes or drops them and compaction summarises only what follows them; a summary "
            "written with a pinned anchor carries it, so a caller that sends back only the tail gets "
            "it back first. 0 pins nothing. options.anchor_messages overrides it per call."
        ),
        example=(
            "Pin the first N model-facing messages of every context::assemble call (the task statement):\n"
            "no pass changes or drops them and compaction summarises only what follows them. The summary of\n"
            "a compaction carries the anchor in a closing section, so a caller that sends back only the tail\n"
            "gets it back first. 0 pins nothing; options.anchor_messages overrides it per call."
        ),
    )
    summary_check: SummaryCheck = declare(
        "off", choice(SummaryCheck), section=Section.ADDITIONS,
        description=(
            '"append": before a summary is accepted, user requests, file paths, URLs and the open '
            'error of the summarised head that it lacks are appended under a fixed heading; "off" '
            "accepts summaries as written."
        ),
        example=(
            '"append": before a summary is accepted, the user requests, file paths, URLs and the open error of\n'
            'the summarised head that it lacks, and what the previous summary\'s "## Retained details" held,\n'
            'are appended under "## Retained details"; "off" keeps summaries as written.'
        ),
        implied=(Implied("recommended", "append", place=1),),
    )
    summarizer_fallback: SummarizerFallback = declare(
        "none", choice(SummarizerFallback), section=Section.ADDITIONS,
        description=(
            '"extractive": when compaction has no summariser or the summariser fails, build the '
            'summary from the head deterministically; "none" skips compaction instead.'
        ),
        example=(
            '"extractive": when compaction has no summariser, or the summariser fails, times out or answers\n'
            'blank, build the summary from the head without a model; "none" skips compaction instead.'
        ),
        implied=(Implied("recommended", "extractive", place=2),),
    )
    working_set: bool = declare(
        False, BOOLEAN, section=Section.ADDITIONS,
        description=(
            'Append a "## Working set" section to every summary (the files acted on and their last '
            "action, paths results surfaced, code symbols, errors and whether they cleared, recurring"
            " URLs and commands), carried forward by later summaries; with drop_oldest, the dropped "
            "history leaves a short note of its working set in its place."
        ),
        example=(
            'true: every summary ends with a "## Working set" section (files acted on with their last action,\n'
            "paths results surfaced, code symbols, errors and whether a later success cleared them, recurring\n"
            "URLs and commands), within half of the summary budget and carried forward by later summaries;\n"
            "with overflow_fallback drop_oldest, the dropped history leaves one note of its working set."
        ),
        implied=(Implied("recommended", True, place=3),),
    )
    report_prefix: bool = declare(
        False, BOOLEAN, section=Section.CACHE,
        description=(
            "Report applied.cache_break_index (the first returned message that differs from the "
            "request's) and applied.system_prompt_changed in every context::assemble answer."
        ),
        example=(
            "true: every context::assemble answer reports applied.cache_break_index (the first returned\n"
            "message that differs from the request's, null when none does) and applied.system_prompt_changed."
        ),
    )
    reduce_to: float = declare(
        1.0, FRACTION, section=Section.CACHE,
        description=(
            "When drop_oldest, compaction or emergency reduction must rewrite earlier history, reduce"
            " to this fraction of the usable budget, in steps that are a function of the content, so "
            "later turns append without touching the prefix; 1 reduces just enough."
        ),
        example=(
            "A fraction of the usable budget in (0, 1]: when drop_oldest, compaction or emergency reduction\n"
            "must rewrite earlier history they reduce to about this share, at cut points that depend only on\n"
            "the content, so the following turns append to an unchanged prefix. 1 reduces just enough."
        ),
    )
    summary_reuse: bool = declare(
        False, BOOLEAN, section=Section.CACHE,
        description=(
            "Remember each history's last compaction and reuse its summary and boundary on later "
            "calls that extend the summarised head, as if the caller had sent the round trip."
        ),
        example=(
            "true: remember each history's last compaction (summary, summarised head, tail start) and reuse\n"
            "it on later calls whose history extends that head, as if the caller had persisted the round trip."
        ),
        implied=(Implied("recommended", True, place=5),),
    )
    summary_placement: SummaryPlacement = declare(
        "system_prompt", choice(SummaryPlacement), section=Section.CACHE,
        description=(
            'Where context::assemble puts a summary: "system_prompt" under a Conversation summary '
            'section; "message" as a leading user message, so the system prompt stays unchanged '
            "across compactions."
        ),
        example=(
            "Where context::assemble puts a summary (a new one, or the previous_summary sent back):\n"
            '"system_prompt" renders it under "# Conversation summary" in the system prompt; "message" sends it\n'
            "as a leading user message (after any pinned anchor), so the system prompt and the tools ahead of\n"
            "it stay unchanged across compactions and their cached prefix survives."
        ),
    )
    eager_compaction_at: float | None = declare(
        None, FRACTION_OR_NULL, section=Section.CACHE,
        description=(
            "Compact once the context exceeds this fraction of the usable budget, even though it "
            "still fits, when compacting then (with a smaller tail) removes at least twice the "
            "remaining headroom more than a full-window compaction would; null compacts only when "
            "over budget."
        ),
        example=(
            "A fraction of the usable budget in (0, 1]: compact once the context exceeds that share even\n"
            "though it still fits, so the summariser runs before the window is full, but only when compacting\n"
            "then (with a smaller tail) removes at least twice the remaining headroom more than waiting for\n"
            "the full window would, so it never brings the next compaction nearer; null compacts only when\n"
            "the context is over budget."
        ),
        implied=(Implied("recommended", 0.8, place=6),),
    )
    compact_ahead_at: float | None = declare(
        None, FRACTION_OR_NULL, section=Section.CACHE,
        description=(
            "Summarise ahead of time: once a call's context exceeds this fraction of the usable "
            "budget without compacting (with eager_compaction_at, and its early compaction would "
            "be due), summarise the head a compaction would summarise in the "
            "background (one job per session, under its compaction lease) and keep the summary in "
            "the session store; a later call that must compact uses it without waiting, and a call "
            "that must compact before it is ready never waits for the summariser. null summarises "
            "only inside the call that compacts."
        ),
        example=(
            "A fraction of the usable budget in (0, 1]: once a call's context exceeds that share and the call\n"
            "did not compact (with eager_compaction_at: and its early compaction would be due), the worker\n"
            "summarises the head a compaction would summarise in the background\n"
            "(the call answers at once, as without the key), one job per session under its compaction lease,\n"
            "and keeps the summary in the session store. A later call of that session that must compact uses\n"
            "the ready summary while its history still extends the summarised head; one that must compact\n"
            "before a summary is ready never waits for the summariser (the extractive summary with\n"
            "summarizer_fallback: extractive, else as without a summariser). null summarises only inside the\n"
            "call that compacts (docs/compaction-ahead.md)."
        ),
    )
    retention: RetentionPolicy | None = declare(
        None, RETENTION_POLICY, section=Section.ADDITIONS,
        description=(
            "The retention policy of context::assemble: per-function truncation of arguments and "
            "results, error results, older prompts and assistant prose, reasoning and media by age. "
            "null (the default) applies none."
        ),
        example=(
            'The retention policy of context::assemble (README "Retention policy"): per-function truncation of\n'
            "call arguments and results, error results, older prompts and assistant prose, reasoning and\n"
            "images by age in turns, reported in applied.warnings. null applies none. For example:\n"
            "  retention:\n"
            "    verbatim_turns: 1\n"
            "    tools:\n"
            "      rules:\n"
            '        - function: "fs::read_file"\n'
            "          result: {mode: over, over: 2000, to: 500, keep: both}\n"
            "      errors: {mode: keep}\n"
            "    reasoning: {keep_turns: 1}"
        ),
    )
    count_calibration: CountCalibration = declare(
        "off", choice(CountCalibration), section=Section.CALIBRATION,
        description=(
            '"usage": counts are anchored on the provider\'s own prompt count, read from the latest '
            "assistant message's usage, and what was added since is scaled by the observed ratio; "
            '"off" keeps the estimator\'s counts.'
        ),
        example=(
            '"usage": token counts are anchored on the provider\'s own count of the previous call (the latest\n'
            "assistant message whose usage has input + cache_read + cache_write > 0) and what was added since\n"
            'is scaled by the ratio observed there; "off" keeps the estimator\'s counts.'
        ),
    )
    lease_store: LeaseStoreName = declare(
        "file", choice(LeaseStoreName), section=Section.PROCESSES,
        description=(
            'Where compaction leases are kept: "file" under lease_dir (processes on one host); '
            '"state" in the engine\'s state store, one lock for every process and host on the engine.'
        ),
        example=(
            'Where compaction leases are kept: "file" under lease_dir (every process on one host sharing the\n'
            'directory); "state" in the engine\'s state store (state::*), one lock for every process and host\n'
            "connected to the engine, with no lease directory. Without a state worker every compaction reads\n"
            "as busy (one warning line). A one-shot `context-manager call` has no engine and uses the files."
        ),
    )
    session_store: SessionStoreName = declare(
        "memory", choice(SessionStoreName), section=Section.PROCESSES,
        description=(
            'Where summary_reuse remembers compactions: "memory" in this process; "state" in the '
            "engine's state store, shared by every process and host on the engine."
        ),
        example=(
            'Where summary_reuse remembers compactions: "memory" in this process; "state" in the engine\'s\n'
            "state store, shared by every process and host (a failing state store only means no reuse).\n"
            "A one-shot call keeps them in its own memory."
        ),
    )
    session_ttl_secs: int = declare(
        3600, POSITIVE_U64, section=Section.PROCESSES,
        description=(
            "How long a compaction remembered in the state store is reused, in seconds "
            "(session_store: state)."
        ),
        example=(
            "How long a compaction remembered in the state store is reused, in seconds (positive; used with\n"
            "session_store: state)."
        ),
    )
    profile: ProfileName = declare(
        "faithful", choice(ProfileName), section=Section.PROFILE,
        description=(
            "A named set of defaults for the keys a configuration leaves out; an explicit value "
            'always wins. "faithful" implies nothing (the original\'s behaviour). "recommended" '
            "implies {implied:recommended}."
        ),
        example=(
            "A named set of defaults for the keys this file leaves out; a key written here always wins.\n"
            '"faithful" implies nothing: context-manager 1.1.6\'s behaviour, byte for byte. "recommended"\n'
            'implies the combination measured best against the peers (BENCHMARKS.md, "The recommended\n'
            'profile"), for a harness with a summariser and for one without:\n'
            "  {implied:recommended}"
        ),
    )

    max_history_tokens: int | None = declare(
        None, POSITIVE_U64_OR_NULL, section=Section.BUDGET,
        description=(
            "A ceiling for the history below the model's window: every reduction aims for "
            "min(usable, max_history_tokens), and the answer's usable is that budget; null lets "
            "the window decide."
        ),
        example=(
            "A ceiling for the history below the model's window, in tokens: every reduction aims for\n"
            "min(usable, this), and the answer's usable is that budget; null lets the window decide."
        ),
    )

    plan_functions: tuple[str, ...] = declare(
        PLAN_FUNCTIONS, NAME_LIST, section=Section.ADDITIONS,
        description=(
            "With working_set, the functions whose latest call is the agent's plan: the latest call "
            "of each (its arguments as the model sent them) is carried whole in every summary and "
            "dropped-history note, newest first, within the working set's share of the summary "
            "budget. [] carries no plan."
        ),
        example=(
            "With working_set: true, the functions whose latest call is the agent's plan (a todo or plan\n"
            "tool). The latest call of each, its arguments as the model sent them, is carried whole in every\n"
            "summary and dropped-history note, newest first, within the working set's share of the summary\n"
            "budget; [] carries no plan. The default names the plan tools of Claude Code, Codex, LangChain\n"
            "Deep Agents, OpenHands and Qwen Code."
        ),
    )

    policy_write_token: str | None = declare(
        None, STRING_OR_NULL, section=Section.PROCESSES,
        description=(
            "When set, context::policy::publish, context::policy::activate and "
            "context::policy::withdraw require a token equal to it (compared in constant time); "
            "null lets any caller on the engine change policies. Never shown in answers or logs."
        ),
        example=(
            "When set, context::policy::publish, activate and withdraw require `token` equal to this\n"
            "(compared in constant time); a wrong or missing one is refused with context/unauthorized and\n"
            "nothing changes. null: any worker on the engine may change policies (docs/policies.md)."
        ),
    )

    summarizer_model: ModelChoice | None = declare(
        None, MODEL_OR_NULL, section=Section.PRUNING,
        description=(
            "The model compaction's summariser calls go to, {id, provider?}, through the router: "
            "the history is chunked by that model's own window, and every compaction that called it "
            "reports applied.summarizer (context::compact: summarizer) with its calls and tokens; "
            "null uses the session's model."
        ),
        example=(
            "The model compaction's summariser calls go to, {id, provider?}, chunked by its own window;\n"
            "each compaction then reports the summariser's calls and tokens. null: the session's model."
        ),
    )
    compaction_instructions: str | None = declare(
        None, STRING_OR_NULL, section=Section.PRUNING,
        description=(
            "Standing instructions added to every summariser prompt, inline compaction in "
            "context::assemble included; context::compact's options.instructions are added after "
            "them. null: the prompts are unchanged."
        ),
        example=(
            "Standing instructions added to every summariser prompt (inline compaction included);\n"
            "context::compact's options.instructions are added after them. null: none."
        ),
    )
    summarizer_request: SummarizerRequestForm = declare(
        "rendered", choice(SummarizerRequestForm), section=Section.PRUNING,
        description=(
            'How compaction in context::assemble asks the router for a summary: "rendered" sends '
            'the head as text in one or more bounded requests; "conversation" sends, when it fits '
            "one request on the session's model, the context as the model last read it (system "
            "prompt, tools, the head's messages) with the instructions after it, so the provider "
            "reads the head from its prompt cache."
        ),
        example=(
            'How compaction in context::assemble asks the router for a summary: "rendered" sends the head as\n'
            'text, in as many bounded requests as it needs; "conversation" sends the context as the model last\n'
            "read it (system prompt, tools, the head's messages) and the instructions after it, so the provider\n"
            "reads the head from its prompt cache; it applies when that fits one request on the session's model\n"
            '(not with summarizer_model set to another model), else the head goes "rendered".'
        ),
        implied=(Implied("recommended", "conversation", place=7),),
    )

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["plan_functions"] = list(self.plan_functions)
        out["retention"] = self.retention.to_json() if self.retention is not None else None
        out["summarizer_model"] = self.summarizer_model.to_json() if self.summarizer_model is not None else None
        return out

    @classmethod
    def key_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


CONFIG_KEYS = KeyTable(WorkerConfig)
# What each profile implies for the keys a configuration leaves out; an explicit value always
# wins. Values are written as the configuration's JSON.
PROFILE_KEYS: dict[str, dict[str, Any]] = CONFIG_KEYS.profiles

DEFAULT_CONFIG = WorkerConfig()
