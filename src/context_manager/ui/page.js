// context-manager console contribution: the configuration form for the `context-manager`
// form family. The console host owns dirty tracking, validation, save and reset; this module
// only draws the fields and proposes the full next value through onChange.
import React, { useEffect, useRef } from 'react'
import { Input, SettingsList, SettingsRow, SettingsSection, Switch } from '@iii-dev/console-ui'

const h = React.createElement
const ID_PREFIX = 'context-manager-cfg'

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

// Documented additions to the original configuration; each switch writes the enum value.
const EXTENSION_SWITCHES = [
  {
    key: 'overflow_fallback',
    label: 'Drop oldest messages on overflow',
    help: 'Instead of failing with context/overflow, drop the oldest messages and report them.',
    fallbackText: 'off (error)',
    isOn: (v) => v === 'drop_oldest',
    valueFor: (on) => (on ? 'drop_oldest' : 'error'),
  },
  {
    key: 'estimator',
    label: 'Tokenizer counts for OpenAI models',
    help: 'Count OpenAI model families with their tokenizer instead of the byte heuristic.',
    fallbackText: 'off (heuristic)',
    isOn: (v) => v === 'auto',
    valueFor: (on) => (on ? 'auto' : 'heuristic'),
  },
  {
    key: 'count_calibration',
    label: 'Calibrate counts on provider usage',
    help: "Anchor token counts on the provider's own count of the previous call and scale what was added since.",
    fallbackText: 'off',
    isOn: (v) => v === 'usage',
    valueFor: (on) => (on ? 'usage' : 'off'),
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
    isOn: (v) => v === 'append',
    valueFor: (on) => (on ? 'append' : 'off'),
  },
  {
    key: 'summarizer_fallback',
    label: 'Summarise without a model',
    help: 'When no summariser answers, build the summary from the history itself instead of skipping compaction.',
    fallbackText: 'off (none)',
    isOn: (v) => v === 'extractive',
    valueFor: (on) => (on ? 'extractive' : 'none'),
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

  const errorIdFor = (key) => (failing.has(`/${key}`) ? errorElementId(`/${key}`) : undefined)

  const propose = (next) => props.onChange(next)

  const editNumber = (key, raw) => {
    const next = { ...value }
    if (raw === '') {
      delete next[key]
    } else {
      const n = Number(raw)
      if (!Number.isSafeInteger(n) || n < 0) return
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
        min: 0,
        step: 1,
        inputMode: 'numeric',
        value: typeof current === 'number' ? String(current) : '',
        placeholder: String(field.fallback),
        'aria-label': field.label,
        'aria-invalid': errorId ? true : undefined,
        'aria-describedby': joinIds(`${id}-help`, `${id}-default`, errorId),
        onChange: (raw) => editNumber(field.key, raw),
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

  const leaseDirId = `${ID_PREFIX}-lease_dir`
  const leaseDirError = errorIdFor('lease_dir')

  return h(
    'div',
    { className: 'ctx-cfg', ref: rootRef },
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
        description: 'Compaction lease coordination and summariser limits. Changes apply from the next call.',
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
        ...EXTENSION_SWITCHES.map((s) =>
          switchRow(s.key, s.label, s.help, s.fallbackText, s.isOn(value[s.key]), (on) =>
            propose({ ...value, [s.key]: s.valueFor(on) }),
          ),
        ),
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
        ...RETENTION_SWITCHES.map((s) =>
          switchRow(s.key, s.label, s.help, s.fallbackText, s.isOn(value[s.key]), (on) =>
            propose({ ...value, [s.key]: s.valueFor(on) }),
          ),
        ),
      ),
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
