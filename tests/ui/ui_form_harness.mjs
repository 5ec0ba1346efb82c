// Test support for tests/ui/test_ui.py: loads page.js with stub `react` and `@iii-dev/console-ui`
// modules, renders the form to a plain element tree, and reports each scenario as JSON.
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const [, , pagePath, workDir] = process.argv
mkdirSync(join(workDir, 'node_modules', 'react'), { recursive: true })
mkdirSync(join(workDir, 'node_modules', '@iii-dev', 'console-ui'), { recursive: true })
writeFileSync(join(workDir, 'node_modules', 'react', 'package.json'), '{"name":"react","type":"module","main":"index.js"}')
writeFileSync(join(workDir, 'node_modules', 'react', 'index.js'), `
const createElement = (type, props, ...children) => ({ type, props: props || {}, children: children.flat() })
export const useRef = () => ({ current: null })
export const useEffect = () => {}
// State hooks by call order, kept across renders of one scenario: rewind() before each render.
let slots = []
let cursor = 0
export const resetHooks = () => { slots = []; cursor = 0 }
export const rewind = () => { cursor = 0 }
export const useState = (initial) => {
  const i = cursor++
  if (!(i in slots)) slots[i] = initial
  return [slots[i], (next) => { slots[i] = typeof next === 'function' ? next(slots[i]) : next }]
}
export default { createElement, useRef, useEffect, useState }
`)
writeFileSync(join(workDir, 'node_modules', '@iii-dev', 'console-ui', 'package.json'), '{"name":"@iii-dev/console-ui","type":"module","main":"index.js"}')
writeFileSync(join(workDir, 'node_modules', '@iii-dev', 'console-ui', 'index.js'), `
export const SettingsSection = 'SettingsSection'
export const SettingsList = 'SettingsList'
export const SettingsRow = 'SettingsRow'
export const Input = 'Input'
export const Switch = 'Switch'
`)
writeFileSync(join(workDir, 'page.mjs'), readFileSync(pagePath, 'utf8'))
const mod = await import(pathToFileURL(join(workDir, 'page.mjs')).href)
const hooks = await import(pathToFileURL(join(workDir, 'node_modules', 'react', 'index.js')).href)

const registered = []
mod.default({ configForms: { register: (family, form) => registered.push([family, form]) } })

function walk(node, visit) {
  if (!node || typeof node !== 'object') return
  visit(node)
  for (const key of ['label', 'description', 'meta', 'control']) walk(node.props[key], visit)
  for (const child of node.children) walk(child, visit)
}

function find(node, test) {
  let found = null
  walk(node, (n) => { if (!found && test(n)) found = n })
  return found
}

function render(props, proposals = []) {
  hooks.rewind()
  const tree = registered[0][1]({ id: 'context-manager', schema: {}, onChange: (v) => proposals.push(v), ...props })
  const sections = []
  const rows = {}
  walk(tree, (n) => {
    if (n.type === 'SettingsSection') sections.push({ title: n.props.title, fields: [] })
    if (n.type === 'SettingsRow') {
      sections[sections.length - 1].fields.push(n.props['data-field'])
      rows[n.props['data-field']] = n
    }
  })
  const controls = {}
  for (const [key, r] of Object.entries(rows)) {
    const c = r.props.control
    controls[key] = { type: c.type, props: c.props, meta: r.props.meta.children.join(''), tree: c }
  }
  let alert = null
  walk(tree, (n) => {
    if (n.props && n.props.role === 'alert') alert = n.children.map((c) => ({ id: c.props.id, text: c.children.join('') }))
  })
  return { tree, sections, controls, proposals, alert }
}

const scenarios = JSON.parse(readFileSync(0, 'utf8'))
const out = { families: registered.map((r) => r[0]), results: [] }
for (const s of scenarios) {
  const errors = s.errors ? new Map(s.errors) : undefined
  // Each edit acts on a fresh render (so state set by an earlier edit shows); the report is of
  // the render after the last edit.
  hooks.resetHooks()
  const proposals = []
  // `invoke: true`: the host gives the form an `invoke`, so the policy view is drawn.
  const host = s.invoke ? { invoke: () => Promise.resolve({}) } : {}
  let r = render({ value: s.value, errors, ...host }, proposals)
  for (const edit of s.edits || (s.edit ? [s.edit] : [])) {
    const c = r.controls[edit.key]
    if (c.type === 'Switch') c.props.onChange({ currentTarget: { checked: edit.checked } })
    else if (c.type === 'select') c.props.onChange({ target: { value: edit.raw } })
    else if (c.type === 'div') find(c.tree, (n) => n.type === 'textarea').props.onChange({ target: { value: edit.raw } })
    else c.props.onChange(edit.raw)
    r = render({ value: s.value, errors, ...host }, proposals)
  }
  r.proposals = proposals
  const controls = {}
  for (const [k, c] of Object.entries(r.controls)) {
    controls[k] = { type: c.type, value: c.props.value, checked: c.props.checked, placeholder: c.props.placeholder,
      min: c.props.min, step: c.props.step, invalid: c.props['aria-invalid'] === true, meta: c.meta, inputType: c.props.type }
    if (c.type === 'div') {
      // The retention editor: its textarea, the problem line and the help list.
      const area = find(c.tree, (n) => n.type === 'textarea')
      const problem = find(c.tree, (n) => n.props.role === 'status')
      const help = find(c.tree, (n) => n.type === 'dl')
      const rules = find(c.tree, (n) => n.type === 'ol')
      controls[k] = { type: 'textarea', value: area.props.value, placeholder: area.props.placeholder,
        invalid: area.props['aria-invalid'] === true, meta: c.meta, problem: problem.children.join(''),
        help: help.children.map((n) => n.children.join('')), rules: rules.children.map((n) => n.children.join('')) }
    }
  }
  const view = find(r.tree, (n) => n.type === mod.PolicyView)
  const policy = view ? { invoke: typeof view.props.invoke, tokenConfigured: view.props.tokenConfigured } : null
  out.results.push({ sections: r.sections, controls, proposals: r.proposals, alert: r.alert, policy })
}
// The policy view's wording of levels, requests, sources and warnings.
out.policyHelpers = {
  levels: [mod.namespaceLevels(null), mod.namespaceLevels('acme'), mod.namespaceLevels('acme/proj-7/user-99')],
  requests: [mod.scopeRequest('budget', null, null), mod.scopeRequest('settings', 'acme', 'gpt-a')],
  sources: [mod.sourceText({ kind: 'worker_config' }),
    mod.sourceText({ kind: 'policy', id: 'settings::1:gpt-4o', namespace: null, tagged_model: 'gpt-4o', version: 1 })],
  warnings: [mod.warningText({ code: 'context_budget_resolved_at', namespace: null, tagged_model: null }),
    mod.warningText({ code: 'retention_policy_overridden', namespace: 'acme', displaced: 'acme/proj-7' }),
    mod.warningText({ code: 'something_new', namespace: 'acme' })],
  faults: [mod.faultText({ code: 'context/unauthorized', message: 'no' }), mod.faultText(new Error('gone')), mod.faultText('x')],
}
process.stdout.write(JSON.stringify(out))
