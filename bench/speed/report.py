"""Turn the measurements of every set into comparison rows, targets and printed tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.kit.measure import paired_ratio

MB = 1024 * 1024


@dataclass(frozen=True)
class Target:
    limit: float
    text: str


# (set, measured, baseline) -> target; the ratio is the median of run-by-run ratios (paired).
TARGETS: dict[tuple[str, str, str], Target] = {
    ("W1", "call", "floor"): Target(3.0, "≤ 3× floor"),
    ("W2", "call", "floor"): Target(2.5, "≤ 2.5× floor"),
    ("W4", "like", "dumps_messages"): Target(2.0, "≤ 2× dumps(messages)"),
    ("W2", "like", "peer"): Target(2.0, "≤ 2× peer"),
    ("W5", "warm", "cold"): Target(0.40, "≤ 0.40× cold"),
}
RSS_TARGET = ("W3", 4.0, "Δ ≤ 4× request")

MEASURED_LABEL = {
    "call": "call bytes→bytes",
    "like": "like-for-like (parsed in, dict out)",
    "warm": "warm worker turn (agent loop)",
}
BASELINE_LABEL = {
    "floor": "floor: loads(req)+dumps(resp)",
    "peer": "peer",
    "dumps_messages": "orjson.dumps(messages)",
    "cold": "cold worker turn, same history",
}
PEER_LABEL = {
    "context::assemble": "peer: LC trim_messages",
    "context::count-tokens": "peer: LC count_tokens_approximately",
}
FUNCTION_SHORT = {"context::assemble": "assemble", "context::prune": "prune",
                  "context::count-tokens": "count-tokens"}


@dataclass
class Row:
    workload: str
    function: str
    measured: str
    median_ms: float | None
    p95_ms: float | None
    baseline: str
    baseline_ms: float | None
    ratio: float | None
    target: str = ""
    verdict: str = ""
    e2e_ms: float | None = None
    note: str = ""


@dataclass
class MemoryRow:
    workload: str
    request_bytes: int
    idle: int
    peak: int
    target: str = ""
    verdict: str = ""

    @property
    def delta(self) -> int:
        return max(0, self.peak - self.idle)

    @property
    def ratio(self) -> float:
        return self.delta / self.request_bytes if self.request_bytes else 0.0


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    memory: list[MemoryRow] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _verdict(key: tuple[str, str, str], ratio: float | None) -> tuple[str, str]:
    target = TARGETS.get(key)
    if target is None:
        return "", ""
    if ratio is None:
        return target.text, "n/a"
    return target.text, "PASS" if ratio <= target.limit else "MISS"


def _compare(set_name: str, function_id: str, stats: dict[str, Any], measured: str, baseline: str,
             e2e: dict[str, Any] | None = None, samples: dict[str, list[float]] | None = None) -> Row | None:
    if measured not in stats:
        return None
    if baseline not in stats and not (baseline == "peer" and function_id in PEER_LABEL):
        return None
    m = stats[measured]
    b = stats.get(baseline, {"median_ms": None})  # the peer is an optional extra
    ratio = m["median_ms"] / b["median_ms"] if b["median_ms"] else None
    if samples and measured in samples and baseline in samples:
        ratio = paired_ratio(samples[measured], samples[baseline])
    target, verdict = _verdict((set_name, measured, baseline), ratio)
    workload = set_name.split("-")[0]
    label = PEER_LABEL.get(function_id, "peer") if baseline == "peer" else BASELINE_LABEL[baseline]
    row = Row(workload, FUNCTION_SHORT.get(function_id, function_id), MEASURED_LABEL[measured],
              m["median_ms"], m["p95_ms"], label, b["median_ms"], ratio, target, verdict)
    if b["median_ms"] is None:
        row.note = "peer not installed (pip install -e '.[bench]')"
    if measured == "call" and e2e:
        row.e2e_ms = e2e.get("median_ms")
        if "error" in e2e:
            row.note = f"e2e failed: {e2e['error']}"
    return row


def build(results: dict[str, Any], e2e: dict[str, Any], quick: bool = False) -> Report:
    report = Report()
    for name in ("W1", "W2", "W2-prune", "W3", "W4"):
        result = results.get(name)
        if result is None:
            continue
        workload = name.split("-")[0]
        if "pending" in result:
            report.pending.append(f"{name} ({result['function_id']}): pending — {result['pending']}")
            continue
        stats = result["stats"]
        function_id = result["function_id"]
        for measured, baseline in (("call", "floor"), ("like", "peer"), ("like", "dumps_messages")):
            if baseline == "dumps_messages" and workload != "W4":
                continue
            row = _compare(name, function_id, stats, measured, baseline, e2e.get(name), result.get("samples"))
            if row is not None:
                report.rows.append(row)
        applied = result.get("applied")
        if applied:
            report.notes.append(f"{name} applied: " + _applied_text(applied))
        rss = result.get("rss")
        if rss:
            mem = MemoryRow(name, result["request_bytes"], rss["idle"], rss["peak"])
            if name == RSS_TARGET[0]:
                mem.target = RSS_TARGET[2]
                mem.verdict = "PASS" if mem.ratio <= RSS_TARGET[1] else "MISS"
                if quick:  # the target is stated for the 6 MB history, quick mode's W3 is smaller
                    mem.verdict = f"({mem.verdict}: quick W3, see full run)"
            report.memory.append(mem)
    if "pending" in results.get("W3", {}):
        report.memory.append(MemoryRow("W3", results.get("W3", {}).get("request_bytes", 0), 0, 0,
                                       RSS_TARGET[2], "pending"))
    w5 = results.get("W5")
    if w5 and "pending" in w5:
        report.pending.append(f"W5 (context::assemble): pending — {w5['pending']}")
    elif w5:
        report.rows.extend(_w5_rows(w5, e2e.get("W5")))
    return report


def _applied_text(applied: dict[str, Any]) -> str:
    keys = ("initial_token_count", "capped_parts", "pruned", "pruned_tokens", "compacted")
    return ", ".join(f"{k}={applied[k]}" for k in keys if k in applied)


def _w5_rows(w5: dict[str, Any], e2e: dict[str, Any] | None = None) -> list[Row]:
    from bench.kit.measure import summary

    indices = w5["cold_indices"]
    warm = [w5["warm"]["calls_ms"][k - 1] for k in indices]
    floors = [w5["warm"]["floor_ms"][k - 1] for k in indices]
    cold = w5["cold_ms"]
    stats = {"warm": summary(warm), "cold": summary(cold), "floor": summary(floors)}
    rows = []
    first, last = indices[0], indices[-1]
    for baseline in ("cold", "floor"):
        m, b = stats["warm"], stats[baseline]
        # Warm and floor ran back to back; warm and cold ran in two processes, so unpaired.
        ratio = paired_ratio(warm, floors) if baseline == "floor" else m["median_ms"] / b["median_ms"]
        target, verdict = _verdict(("W5", "warm", baseline), ratio)
        rows.append(Row("W5", "assemble", MEASURED_LABEL["warm"], m["median_ms"], m["p95_ms"],
                        BASELINE_LABEL[baseline], b["median_ms"], ratio, target, verdict,
                        note=f"calls {first}–{last} of {len(w5['warm']['calls_ms'])}"))
    if e2e and "error" in e2e:
        rows[0].note += f"; e2e failed: {e2e['error']}"
    elif e2e:
        # Through the engine: the warm call in the e2e column, and the warm/cold ratio there.
        rows[0].e2e_ms = e2e["warm"]["median_ms"]
        rows[1].e2e_ms = e2e["warm"]["median_ms"]
        rows[0].note += (f"; through the engine: warm {e2e['warm']['median_ms']:.2f} ms, cold "
                         f"{e2e['cold']['median_ms']:.2f} ms "
                         f"({e2e['warm']['median_ms'] / e2e['cold']['median_ms']:.2f}×)")
    rows[1].note = rows[0].note
    return rows


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


HEADERS = ("workload", "function", "measured", "median ms", "p95 ms", "baseline", "base ms", "ratio",
           "target", "verdict", "e2e ms")


def row_cells(row: Row, e2e_state: str) -> list[str]:
    e2e = _ms(row.e2e_ms) if row.e2e_ms is not None else (e2e_state if row.measured.startswith("call") else "")
    return [row.workload, row.function, row.measured, _ms(row.median_ms), _ms(row.p95_ms), row.baseline,
            _ms(row.baseline_ms), _ratio(row.ratio), row.target, row.verdict, e2e]


MEMORY_HEADERS = ("workload", "request MB", "idle MB", "peak MB", "Δ MB", "Δ / request", "target", "verdict")


def memory_cells(row: MemoryRow) -> list[str]:
    if row.verdict == "pending":
        return [row.workload, f"{row.request_bytes / MB:.2f}", "—", "—", "—", "—", row.target, "pending"]
    return [row.workload, f"{row.request_bytes / MB:.2f}", f"{row.idle / MB:.1f}", f"{row.peak / MB:.1f}",
            f"{row.delta / MB:.1f}", f"{row.ratio:.2f}×", row.target, row.verdict]


def _text_table(headers: tuple[str, ...], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _markdown_table(headers: tuple[str, ...], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def render(report: Report, e2e_state: str, markdown: bool = False) -> str:
    table = _markdown_table if markdown else _text_table
    parts = [table(HEADERS, [row_cells(r, e2e_state) for r in report.rows]), "",
             "Peak RSS (one call in a fresh process per workload set, above idle after imports and "
             "reading the request):", "",
             table(MEMORY_HEADERS, [memory_cells(m) for m in report.memory])]
    if report.pending:
        parts += ["", "Pending:"] + [f"- {p}" for p in report.pending]
    row_notes = list(dict.fromkeys(f"{r.workload} {r.function}: {r.note}" for r in report.rows if r.note))
    if report.notes or row_notes:
        parts += [""] + row_notes + report.notes
    return "\n".join(parts)
