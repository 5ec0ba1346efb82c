// context-manager console contribution: the configuration form for the `context-manager`
// form family. The console host owns dirty tracking, validation, save and reset; this module
// only draws the fields and proposes the full next value through onChange.
import React, { useEffect, useRef, useState } from 'react'
import { Input, SettingsList, SettingsRow, SettingsSection, Switch } from '@iii-dev/console-ui'

const h = React.createElement
const ID_PREFIX = 'context-manager-cfg'

// What each profile implies for the keys the stored value leaves out (the worker's PROFILE_KEYS);
// an explicit value always wins.
const PROFILES = {
  faithful: {},
  recommended: {
    summary_check: 'append',
    summarizer_fallback: 'extractive',
    working_set: true,
    overflow_fallback: 'drop_oldest',
    summary_reuse: true,
    eager_compaction_at: 0.8,
  },
}

function profileText(name) {
  const keys = Object.entries(PROFILES[name])
  return keys.length === 0 ? 'nothing (the 1.1.6 behaviour)' : keys.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')
}

const BUDGET_NUMBERS = [
  {
    key: 'reserved_tokens_cap',
    label: 'Reserve ceiling (tokens)',
    fallback: 20000,
    help: 'Largest default reserve, in tokens, once the percentage below has been applied.',
  },
  {
    key: 'reserved_pct',
    label: 'Output reserve (% of window)',
    fallback: 10,
    help: "Percentage of the model's context window held back for its output.",
  },
]

const PRUNING_NUMBERS = [
  {
    key: 'protect_recent_tokens',
    label: 'Recent output window (tokens)',
    fallback: 40000,
    help: 'Newest function-output tokens that normal pruning keeps. 0 turns the window off.',
  },
  {
    key: 'decay_user_turns',
    label: 'Output decay (user turns)',
    fallback: 0,
    help: 'An output becomes prunable after this many later user turns. 0 turns decay off.',
  },
  {
    key: 'protected_user_turns',
    label: 'Protected user turns',
    fallback: 2,
    help: 'Outputs of this many latest user turns are never pruned. 0 turns the exemption off.',
  },
  {
    key: 'min_free_tokens',
    label: 'Minimum saving (tokens)',
    fallback: 20000,
    help: 'Normal pruning is skipped when it would save fewer tokens than this.',
  },
  {
    key: 'max_output_chars',
    label: 'Verbose output size (bytes)',
    fallback: 2000,
    help: 'Outputs larger than this are verbose and prunable at once; smaller ones can still decay.',
  },
  {
    key: 'max_result_tokens',
    label: 'Per-result ceiling (tokens)',
    fallback: 20000,
    help: 'Largest size a single function result may keep in an assembled context. 0 turns the cap off.',
  },
  {
    key: 'tail_turns',
    label: 'Verbatim tail (turns)',
    fallback: 2,
    help: 'Most recent turns that compaction keeps word for word.',
  },
]

const RUNTIME_NUMBERS = [
  {
    key: 'lease_ttl_secs',
    label: 'Compaction lease lifetime (seconds)',
    fallback: 300,
    help: 'How long a compaction lease is honoured by other callers.',
  },
  {
    key: 'summarizer_timeout_ms',
    label: 'Summariser timeout (milliseconds)',
    fallback: 320000,
    help: 'Longest time a single summariser request may take.',
  },
]

// A switch between two values of a key: checked proposes `on`, unchecked `off`.
const choice = (on, off) => ({ isOn: (v) => v === on, valueFor: (checked) => (checked ? on : off) })

// Several processes or hosts: leases and remembered compactions in the engine's state store.
const SHARING_SWITCHES = [
  {
    key: 'lease_store',
    label: 'Share compaction leases through the engine',
    help: "Keep compaction leases in the engine's state store, one lock for every process and host on the engine, instead of files under the lease directory.",
    fallbackText: 'off (file)',
    ...choice('state', 'file'),
  },
  {
    key: 'session_store',
    label: 'Share remembered summaries through the engine',
    help: "Keep the compactions that summary reuse remembers in the engine's state store, shared by every process and host, instead of this process's memory.",
    fallbackText: 'off (memory)',
    ...choice('state', 'memory'),
  },
]

const SHARING_NUMBERS = [
  {
    key: 'session_ttl_secs',
    label: 'Shared summary lifetime (seconds)',
    fallback: 3600,
    min: 1,
    help: 'How long a summary remembered in the state store is reused. At least 1.',
  },
]

// Documented additions to the original configuration; each switch writes the enum value.
const EXTENSION_SWITCHES = [
  {
    key: 'overflow_fallback',
    label: 'Drop oldest messages on overflow',
    help: 'Instead of failing with context/overflow, drop the oldest messages and report them.',
    fallbackText: 'off (error)',
    ...choice('drop_oldest', 'error'),
  },
  {
    key: 'estimator',
    label: 'Tokenizer counts for OpenAI models',
    help: 'Count OpenAI model families with their tokenizer instead of the byte heuristic.',
    fallbackText: 'off (heuristic)',
    ...choice('auto', 'heuristic'),
  },
  {
    key: 'count_calibration',
    label: 'Calibrate counts on provider usage',
    help: "Anchor token counts on the provider's own count of the previous call and scale what was added since.",
    fallbackText: 'off',
    ...choice('usage', 'off'),
  },
  {
    key: 'user_less_compaction',
    label: 'Compact histories without user messages',
    help: 'A history with no user message is compacted by assistant rounds.',
    fallbackText: 'on',
    isOn: (v) => v !== false,
    valueFor: (on) => on,
  },
]

// Task retention: pinned anchor messages, the summary retention check, the extractive fallback.
const RETENTION_NUMBERS = [
  {
    key: 'anchor_messages',
    label: 'Pinned anchor messages',
    fallback: 0,
    help: 'The first messages of every assembled context stay verbatim and first; compaction summarises only what follows them. 0 pins nothing.',
  },
]

const RETENTION_SWITCHES = [
  {
    key: 'summary_check',
    label: 'Check what every summary kept',
    help: 'Append the user requests, file paths, URLs and the open error a summary left out, under a fixed heading.',
    fallbackText: 'off',
    ...choice('append', 'off'),
  },
  {
    key: 'summarizer_fallback',
    label: 'Summarise without a model',
    help: 'When no summariser answers, build the summary from the history itself instead of skipping compaction.',
    fallbackText: 'off (none)',
    ...choice('extractive', 'none'),
  },
  {
    key: 'working_set',
    label: 'Keep the working set',
    help: 'Every summary lists the files, symbols, errors, URLs and commands the agent worked with; dropped history leaves a note of them.',
    fallbackText: 'off',
    isOn: (v) => v === true,
    valueFor: (on) => on,
  },
]

// The retention policy: a JSON editor checked here as strictly as the worker parses it, so only a
// policy the worker accepts is proposed. The help texts restate the configuration schema's.
const RETENTION_HELP = [
  ['verbatim_turns', 'The most recent N user turns (assistant rounds in a window without user messages) are never truncated.'],
  ['tools', 'Per-function truncation of call arguments and results.'],
  ['tools.default', 'The treatment of a function no rule matches.'],
  ['tools.rules', 'The first rule whose glob matches the function id wins.'],
  ['tools.rules[].function', 'A glob over function ids, e.g. fs::*.'],
  ['tools.errors', 'Replaces the result rule for a result with is_error: true.'],
  ['tools.mark_truncations', 'Put a marker where a payload was cut.'],
  ['text', 'User text (prompt) and assistant text (message) older than the verbatim window.'],
  ['reasoning', 'Thinking blocks older than keep_turns user turns are removed.'],
  ['media', 'Images older than keep_turns user turns become placeholders.'],
  ['media.rules[].mime', 'A MIME pattern, e.g. image/*.'],
  ['Truncation', 'keep: never cut; always: cut to `to` tokens; over: above `over` tokens, cut to `to` (to <= over). Tokens of the configured estimator.'],
  ['Truncation.keep', 'Which ends of a cut payload stay.'],
]

const RETENTION_EXAMPLE = {
  verbatim_turns: 1,
  tools: {
    rules: [{ function: 'read_file', result: { mode: 'over', over: 2000, to: 500, keep: 'both' } }],
    errors: { mode: 'keep' },
  },
  reasoning: { keep_turns: 1 },
}

// Values named as the worker's configuration errors name them.
function describe(v) {
  if (v === null) return 'null'
  if (typeof v === 'boolean') return `boolean \`${v}\``
  if (typeof v === 'number') return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``
  if (typeof v === 'string') return `string "${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
  return Array.isArray(v) ? 'sequence' : 'map'
}

class PolicyProblem extends Error {}

function fail(path, reason) {
  throw new PolicyProblem(`${path}: ${reason}`)
}

function members(v, path, allowed) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(path, `expected an object, got ${describe(v)}`)
  for (const key of Object.keys(v).sort()) {
    if (!allowed.includes(key)) fail(path, `unknown member \`${key}\`, expected one of ${allowed.map((k) => `\`${k}\``).join(', ')}`)
  }
  return v
}

function count(v, path) {
  if (typeof v !== 'number' || !Number.isInteger(v)) fail(path, `expected a non-negative integer, got ${describe(v)}`)
  if (v < 0 || !Number.isSafeInteger(v)) fail(path, `expected a non-negative integer, got ${v}`)
}

function list(v, path) {
  if (!Array.isArray(v)) fail(path, `expected an array, got ${describe(v)}`)
  return v
}

function glob(v, path) {
  if (typeof v !== 'string') fail(path, `expected a glob string, got ${describe(v)}`)
  if (v === '') fail(path, 'the glob is empty')
  for (let i = 0; i < v.length; i += 1) {
    if (v[i] === '[') {
      const close = v.indexOf(']', i + 2)
      if (close < 0) fail(path, `malformed glob '${v}': \`[\` at ${i} is never closed`)
      i = close
    } else if (v[i] === ']') {
      fail(path, `malformed glob '${v}': \`]\` at ${i} closes nothing`)
    }
  }
}

function truncation(v, path) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(path, `expected an object, got ${describe(v)}`)
  if (!('mode' in v)) fail(path, 'missing member `mode`')
  const modes = { keep: ['mode'], always: ['mode', 'to', 'keep'], over: ['mode', 'over', 'to', 'keep'] }
  const allowed = typeof v.mode === 'string' && Object.hasOwn(modes, v.mode) ? modes[v.mode] : null
  if (!allowed) fail(`${path}.mode`, `expected one of \`keep\`, \`always\`, \`over\`, got ${describe(v.mode)}`)
  members(v, path, allowed)
  if (v.mode === 'keep') return
  for (const required of allowed.slice(1, -1)) {
    if (!(required in v)) fail(path, `missing member \`${required}\` (mode \`${v.mode}\`)`)
  }
  count(v.to, `${path}.to`)
  if (v.mode === 'over') {
    count(v.over, `${path}.over`)
    if (v.to > v.over) fail(`${path}.to`, `${v.to} is greater than over (${v.over})`)
  }
  if ('keep' in v && !['head', 'tail', 'both'].includes(v.keep)) {
    fail(`${path}.keep`, `expected one of \`head\`, \`tail\`, \`both\`, got ${describe(v.keep)}`)
  }
}

function optional(v, key, path, check) {
  if (key in v) check(v[key], `${path}.${key}`)
}

function treatment(v, path, extra = []) {
  members(v, path, [...extra, 'arguments', 'result'])
  optional(v, 'arguments', path, truncation)
  optional(v, 'result', path, truncation)
}

// The first fault of a policy as `retention.<path>: <reason>`, or null for a policy the worker accepts.
export function retentionProblem(policy) {
  try {
    if (policy === null) return null
    const root = 'retention'
    members(policy, root, ['tools', 'verbatim_turns', 'text', 'reasoning', 'media'])
    optional(policy, 'tools', root, (tools, path) => {
      members(tools, path, ['default', 'rules', 'errors', 'mark_truncations'])
      const rules = 'rules' in tools ? list(tools.rules, `${path}.rules`) : []
      optional(tools, 'default', path, (d, p) => treatment(d, p))
      rules.forEach((rule, i) => {
        const at = `${path}.rules[${i}]`
        members(rule, at, ['function', 'arguments', 'result'])
        if (!('function' in rule)) fail(at, 'missing member `function`')
        glob(rule.function, `${at}.function`)
        treatment(rule, at, ['function'])
      })
      optional(tools, 'errors', path, (e, p) => (e === null ? null : truncation(e, p)))
      optional(tools, 'mark_truncations', path, (m, p) => {
        if (typeof m !== 'boolean') fail(p, `expected a boolean, got ${describe(m)}`)
      })
    })
    optional(policy, 'verbatim_turns', root, count)
    optional(policy, 'text', root, (text, path) => {
      members(text, path, ['prompt', 'message'])
      optional(text, 'prompt', path, truncation)
      optional(text, 'message', path, truncation)
    })
    optional(policy, 'reasoning', root, (r, path) => {
      members(r, path, ['keep_turns'])
      if (!('keep_turns' in r)) fail(path, 'missing member `keep_turns`')
      count(r.keep_turns, `${path}.keep_turns`)
    })
    optional(policy, 'media', root, (media, path) => {
      members(media, path, ['default_keep_turns', 'rules'])
      const rules = 'rules' in media ? list(media.rules, `${path}.rules`) : []
      optional(media, 'default_keep_turns', path, count)
      rules.forEach((rule, i) => {
        const at = `${path}.rules[${i}]`
        members(rule, at, ['mime', 'keep_turns'])
        for (const required of ['mime', 'keep_turns']) {
          if (!(required in rule)) fail(at, `missing member \`${required}\``)
        }
        if (typeof rule.mime !== 'string') fail(`${at}.mime`, `expected a MIME pattern string, got ${describe(rule.mime)}`)
        if (!/^[A-Za-z0-9!#$&^_.+\-*?[\]]+\/[A-Za-z0-9!#$&^_.+\-*?[\]]+$/.test(rule.mime)) {
          fail(`${at}.mime`, `malformed MIME pattern '${rule.mime}': expected type/subtype, e.g. "image/*"`)
        }
        glob(rule.mime, `${at}.mime`)
        count(rule.keep_turns, `${at}.keep_turns`)
      })
    })
    return null
  } catch (error) {
    if (error instanceof PolicyProblem) return error.message
    throw error
  }
}

const KEEP_WORDS = { head: 'head', tail: 'tail', both: 'head and tail' }

function truncationWords(t) {
  if (t.mode === 'keep') return 'kept whole'
  const ends = KEEP_WORDS[t.keep || 'both']
  if (t.mode === 'always') return `cut to ${formatDefault(t.to)} tokens (${ends})`
  return `over ${formatDefault(t.over)} tokens cut to ${formatDefault(t.to)} (${ends})`
}

function treatmentWords(t) {
  const parts = []
  if (t.arguments) parts.push(`arguments ${truncationWords(t.arguments)}`)
  if (t.result) parts.push(`result ${truncationWords(t.result)}`)
  return parts.length > 0 ? parts.join('; ') : 'no change'
}

// The tool rules of a valid policy in the order they are tried, one line each.
export function toolRuleLines(policy) {
  const tools = policy && policy.tools
  if (!tools) return []
  const lines = (tools.rules || []).map((rule, i) => `${i + 1}. ${rule.function}: ${treatmentWords(rule)}`)
  if (tools.default) lines.push(`otherwise: ${treatmentWords(tools.default)}`)
  if (tools.errors) lines.push(`error results: ${truncationWords(tools.errors)}`)
  return lines
}

function policyText(policy) {
  return policy === undefined || policy === null ? '' : JSON.stringify(policy, null, 2)
}
// Cache-aware reduction: the prefix report, stable reduction steps, summary reuse.
const CACHE_FRACTIONS = [
  {
    key: 'reduce_to',
    label: 'Reduce to this share of the budget',
    fallback: 1.0,
    help: 'When older history must be rewritten to fit, reduce to this share of the usable budget (0 to 1) in content-defined steps, so later turns keep the prefix. 1 reduces just enough.',
  },
  {
    key: 'eager_compaction_at',
    label: 'Compact early at this share of the budget',
    fallback: null,
    fallbackText: 'off',
    help: 'Compact once the context passes this share of the usable budget (0 to 1), before the window is full, when compacting deeper then keeps the next compaction as far away as waiting would. Empty compacts only when over budget.',
  },
]

const CACHE_SWITCHES = [
  {
    key: 'report_prefix',
    label: 'Report where the prefix changes',
    help: 'Every assembled answer reports the first message that differs from the request and whether the system prompt changed.',
    fallbackText: 'off',
    ...choice(true, false),
  },
  {
    key: 'summary_reuse',
    label: 'Reuse summaries across calls',
    help: 'Remember each history\'s last compaction and reuse it when a later call extends the summarised history.',
    fallbackText: 'off',
    ...choice(true, false),
  },
  {
    key: 'summary_placement',
    label: 'Send the summary as a message',
    help: 'Put the summary in a leading user message instead of the system prompt, so the system prompt stays the same across compactions.',
    fallbackText: 'off (system prompt)',
    ...choice('message', 'system_prompt'),
  },
]

function objectOrEmpty(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? { ...value } : {}
}

function errorEntries(errors) {
  if (!errors) return []
  if (typeof errors.entries === 'function' && typeof errors.size === 'number') return [...errors.entries()]
  return Object.entries(errors)
}

function errorElementId(pointer) {
  const suffix = pointer.replace(/[^A-Za-z0-9_-]+/g, '-')
  return `${ID_PREFIX}-error-${suffix || 'root'}`
}

function joinIds(...ids) {
  const joined = ids.filter(Boolean).join(' ')
  return joined || undefined
}

function formatDefault(n) {
  return Number(n).toLocaleString('en-US')
}

function row(key, label, help, defaultText, control, controlId) {
  return h(SettingsRow, {
    key,
    'data-field': key,
    label: h('label', { htmlFor: controlId }, label),
    description: h('span', { id: `${controlId}-help` }, help),
    meta: h('span', { id: `${controlId}-default` }, `Default: ${defaultText}`),
    control,
  })
}

export function ContextManagerConfigForm(props) {
  const value = objectOrEmpty(props.value)
  const errors = errorEntries(props.errors)
  const failing = new Set(errors.map(([pointer]) => pointer))
  const rootRef = useRef(null)
  // The text being typed while it is not a policy the worker accepts: { text, problem }, else null.
  const [draft, setDraft] = useState(null)

  const errorIdFor = (key) => (failing.has(`/${key}`) ? errorElementId(`/${key}`) : undefined)
  // The profile in force and what it implies for the keys the value leaves out.
  const profile = Object.hasOwn(PROFILES, value.profile) ? value.profile : 'faithful'
  const implied = PROFILES[profile]
  const shown = (key) => (key in value ? value[key] : implied[key])
  const defaultFor = (key, text) => (key in implied ? `${JSON.stringify(implied[key])} (${profile} profile)` : text)

  const propose = (next) => props.onChange(next)

  const editNumber = (key, raw, min = 0) => {
    const next = { ...value }
    if (raw === '') {
      delete next[key]
    } else {
      const n = Number(raw)
      if (!Number.isSafeInteger(n) || n < min) return
      next[key] = n
    }
    propose(next)
  }

  const editFraction = (key, raw) => {
    const next = { ...value }
    if (raw === '') {
      delete next[key]
    } else {
      const n = Number(raw)
      if (!Number.isFinite(n) || n <= 0 || n > 1) return
      next[key] = n
    }
    propose(next)
  }

  const editText = (key, raw) => {
    const next = { ...value }
    if (raw === '') delete next[key]
    else next[key] = raw
    propose(next)
  }

  useEffect(() => {
    const key = props.focusField && props.focusField[0]
    if (!key || !rootRef.current) return
    const holder = rootRef.current.querySelector(`[data-field="${CSS.escape(key)}"]`)
    if (!holder) return
    holder.scrollIntoView({ block: 'center' })
    const target = holder.matches('input, button, [tabindex]')
      ? holder
      : holder.querySelector('input, button, [tabindex]')
    if (target) target.focus()
  }, [props.focusField])

  // A row of one of the switch tables: its value comes from `isOn`, its proposal from `valueFor`.
  const switchField = (s) =>
    switchRow(s.key, s.label, s.help, defaultFor(s.key, s.fallbackText), s.isOn(shown(s.key)), (on) =>
      propose({ ...value, [s.key]: s.valueFor(on) }),
    )

  const numberRow = (field) => {
    const id = `${ID_PREFIX}-${field.key}`
    const errorId = errorIdFor(field.key)
    const current = value[field.key]
    return row(
      field.key,
      field.label,
      field.help,
      formatDefault(field.fallback),
      h(Input, {
        id,
        className: 'ctx-cfg-control ctx-cfg-number',
        type: 'number',
        min: field.min ?? 0,
        step: 1,
        inputMode: 'numeric',
        value: typeof current === 'number' ? String(current) : '',
        placeholder: String(field.fallback),
        'aria-label': field.label,
        'aria-invalid': errorId ? true : undefined,
        'aria-describedby': joinIds(`${id}-help`, `${id}-default`, errorId),
        onChange: (raw) => editNumber(field.key, raw, field.min ?? 0),
      }),
      id,
    )
  }

  const fractionRow = (field) => {
    const id = `${ID_PREFIX}-${field.key}`
    const errorId = errorIdFor(field.key)
    const current = value[field.key]
    return row(
      field.key,
      field.label,
      field.help,
      defaultFor(field.key, field.fallbackText ?? String(field.fallback)),
      h(Input, {
        id,
        className: 'ctx-cfg-control ctx-cfg-number',
        type: 'number',
        min: 0,
        max: 1,
        step: 0.05,
        inputMode: 'decimal',
        value: typeof current === 'number' ? String(current) : '',
        placeholder: field.key in implied ? String(implied[field.key]) : field.fallbackText ?? String(field.fallback),
        'aria-label': field.label,
        'aria-invalid': errorId ? true : undefined,
        'aria-describedby': joinIds(`${id}-help`, `${id}-default`, errorId),
        onChange: (raw) => editFraction(field.key, raw),
      }),
      id,
    )
  }

  const switchRow = (key, label, help, defaultText, checked, onToggle) => {
    const id = `${ID_PREFIX}-${key}`
    const errorId = errorIdFor(key)
    return row(
      key,
      label,
      help,
      defaultText,
      h(Switch, {
        id,
        checked,
        'aria-label': label,
        'aria-invalid': errorId ? true : undefined,
        'aria-describedby': joinIds(`${id}-help`, `${id}-default`, errorId),
        onChange: (event) => onToggle(Boolean(event.currentTarget.checked)),
      }),
      id,
    )
  }

  const editRetention = (raw) => {
    const next = { ...value }
    if (raw.trim() === '') {
      setDraft(null)
      delete next.retention
      propose(next)
      return
    }
    let policy
    try {
      policy = JSON.parse(raw)
    } catch (error) {
      setDraft({ text: raw, problem: `retention: not JSON (${error.message})` })
      return
    }
    const problem = retentionProblem(policy)
    if (problem) {
      setDraft({ text: raw, problem })
      return
    }
    setDraft(null)
    next.retention = policy
    propose(next)
  }

  const retentionId = `${ID_PREFIX}-retention`
  const retentionError = errorIdFor('retention')
  const retentionRow = row(
    'retention',
    'Retention policy (JSON)',
    'Per-function truncation of arguments and results, error results, older prose, reasoning and images by age. Empty applies none.',
    'none',
    h(
      'div',
      { className: 'ctx-cfg-policy' },
      h('textarea', {
        id: retentionId,
        className: 'ctx-cfg-control ctx-cfg-json',
        rows: 12,
        spellCheck: false,
        value: draft ? draft.text : policyText(value.retention),
        placeholder: JSON.stringify(RETENTION_EXAMPLE, null, 2),
        'aria-label': 'Retention policy (JSON)',
        'aria-invalid': draft || retentionError ? true : undefined,
        'aria-describedby': joinIds(`${retentionId}-help`, `${retentionId}-default`, `${retentionId}-problem`, retentionError),
        onChange: (event) => editRetention(event.target.value),
      }),
      h('div', { id: `${retentionId}-problem`, className: 'ctx-cfg-problem', role: 'status' }, draft ? draft.problem : ''),
      h(
        'ol',
        { className: 'ctx-cfg-rules', 'aria-label': 'Tool rules in the order they are tried' },
        ...(retentionProblem(value.retention ?? null) ? [] : toolRuleLines(value.retention)).map((line) =>
          h('li', { key: line }, line),
        ),
      ),
      h(
        'dl',
        { className: 'ctx-cfg-help' },
        ...RETENTION_HELP.flatMap(([path, text]) => [h('dt', { key: `${path}-t` }, path), h('dd', { key: `${path}-d` }, text)]),
      ),
    ),
    retentionId,
  )

  const profileId = `${ID_PREFIX}-profile`
  const profileRow = row(
    'profile',
    'Profile',
    `Defaults for the settings this form leaves unset; a setting changed below wins. faithful implies ${profileText('faithful')}; recommended implies ${profileText('recommended')}.`,
    'faithful',
    h(
      'select',
      {
        id: profileId,
        className: 'ctx-cfg-control',
        value: profile,
        'aria-label': 'Profile',
        'aria-invalid': errorIdFor('profile') ? true : undefined,
        'aria-describedby': joinIds(`${profileId}-help`, `${profileId}-default`, errorIdFor('profile')),
        onChange: (event) => {
          const next = { ...value, profile: event.target.value }
          if (next.profile === 'faithful') delete next.profile
          propose(next)
        },
      },
      ...Object.keys(PROFILES).map((name) => h('option', { key: name, value: name }, name)),
    ),
    profileId,
  )

  const leaseDirId = `${ID_PREFIX}-lease_dir`
  const leaseDirError = errorIdFor('lease_dir')

  return h(
    'div',
    { className: 'ctx-cfg', ref: rootRef },
    h(
      SettingsSection,
      {
        title: 'Profile',
        description: 'One setting for a measured combination of the ones below: faithful keeps the 1.1.6 behaviour.',
      },
      h(SettingsList, null, profileRow),
    ),
    h(
      SettingsSection,
      {
        title: 'Budget defaults',
        description:
          'Worker-wide defaults for fitting a context into a model. Per-call options override the matching settings.',
      },
      h(
        SettingsList,
        null,
        ...BUDGET_NUMBERS.map(numberRow),
        switchRow(
          'allow_fallback_limits',
          'Fallback model limits',
          'When a model cannot be resolved, assume conservative limits of 8,192 context and 1,024 output tokens instead of failing.',
          'on',
          value.allow_fallback_limits !== false,
          (on) => propose({ ...value, allow_fallback_limits: on }),
        ),
      ),
    ),
    h(
      SettingsSection,
      {
        title: 'Pruning and compaction',
        description: 'Which function outputs stay verbatim, and when a compaction is worth running.',
      },
      h(SettingsList, null, ...PRUNING_NUMBERS.map(numberRow)),
    ),
    h(
      SettingsSection,
      {
        title: 'Runtime',
        description: 'Compaction lease coordination, shared state and summariser limits. Changes apply from the next call.',
      },
      h(
        SettingsList,
        null,
        ...RUNTIME_NUMBERS.map(numberRow),
        row(
          'lease_dir',
          'Lease directory',
          'Where compaction lease files are kept. A leading ~/ means the home directory.',
          'data/context-manager, relative to III_COMPOSE_DIR',
          h(Input, {
            id: leaseDirId,
            className: 'ctx-cfg-control ctx-cfg-path',
            type: 'text',
            value: typeof value.lease_dir === 'string' ? value.lease_dir : '',
            placeholder: 'data/context-manager',
            spellCheck: false,
            autoComplete: 'off',
            'aria-label': 'Lease directory',
            'aria-invalid': leaseDirError ? true : undefined,
            'aria-describedby': joinIds(`${leaseDirId}-help`, `${leaseDirId}-default`, leaseDirError),
            onChange: (raw) => editText('lease_dir', raw),
          }),
          leaseDirId,
        ),
        ...SHARING_SWITCHES.map(switchField),
        ...SHARING_NUMBERS.map(numberRow),
      ),
    ),
    h(
      SettingsSection,
      {
        title: 'Overflow and counting',
        description:
          'Settings added beyond the 1.1.6 ones. The defaults keep the 1.1.6 counts and overflow error; only histories without user messages compact differently.',
      },
      h(
        SettingsList,
        null,
        ...EXTENSION_SWITCHES.map(switchField),
      ),
    ),
    h(
      SettingsSection,
      {
        title: 'Task retention',
        description:
          'Keep the task in view across compactions. The defaults change nothing.',
      },
      h(
        SettingsList,
        null,
        ...RETENTION_NUMBERS.map(numberRow),
        ...RETENTION_SWITCHES.map(switchField),
      ),
    ),
    h(
      SettingsSection,
      {
        title: 'Cache-aware reduction',
        description:
          'Keep the prompt prefix a provider caches stable across calls. The defaults change nothing.',
      },
      h(
        SettingsList,
        null,
        ...CACHE_SWITCHES.slice(0, 1).map(switchField),
        ...CACHE_FRACTIONS.map(fractionRow),
        ...CACHE_SWITCHES.slice(1).map(switchField),
      ),
    ),
    h(
      SettingsSection,
      {
        title: 'Retention policy',
        description: 'What older history keeps, per function and per kind of content. Empty (the default) changes nothing.',
      },
      h(SettingsList, null, retentionRow),
    ),
    errors.length > 0
      ? h(
          'div',
          { className: 'ctx-cfg-errors', role: 'alert' },
          ...errors.map(([pointer, message]) =>
            h('div', { key: pointer || message, id: errorElementId(pointer) }, pointer ? `${pointer}: ${message}` : message),
          ),
        )
      : null,
  )
}

export default function setup(host) {
  host.configForms.register('context-manager', ContextManagerConfigForm)
}
