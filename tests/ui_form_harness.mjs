// Test support for tests/test_ui.py: loads page.js with stub `react` and `@iii-dev/console-ui`
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
export default { createElement }
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

const registered = []
mod.default({ configForms: { register: (family, form) => registered.push([family, form]) } })

function walk(node, visit) {
  if (!node || typeof node !== 'object') return
  visit(node)
  for (const key of ['label', 'description', 'meta', 'control']) walk(node.props[key], visit)
  for (const child of node.children) walk(child, visit)
}

function render(props) {
  const proposals = []
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
    controls[key] = { type: c.type, props: c.props, meta: r.props.meta.children.join('') }
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
  const r = render({ value: s.value, errors })
  if (s.edit) {
    const c = r.controls[s.edit.key]
    if (c.type === 'Switch') c.props.onChange({ currentTarget: { checked: s.edit.checked } })
    else c.props.onChange(s.edit.raw)
  }
  const controls = {}
  for (const [k, c] of Object.entries(r.controls)) {
    controls[k] = { type: c.type, value: c.props.value, checked: c.props.checked, placeholder: c.props.placeholder,
      min: c.props.min, step: c.props.step, invalid: c.props['aria-invalid'] === true, meta: c.meta, inputType: c.props.type }
  }
  out.results.push({ sections: r.sections, controls, proposals: r.proposals, alert: r.alert })
}
process.stdout.write(JSON.stringify(out))
