// A small stand-in for the console's component module (@iii-dev/console-ui): the five components
// page.js imports, drawn as plain DOM with the call shapes the console uses (Input reports the
// new text, Switch the change event).
import React from 'react'

const h = React.createElement

export function SettingsSection({ title, description, children }) {
  return h('section', { className: 'settings-section' },
    h('h2', null, title), description ? h('p', { className: 'settings-description' }, description) : null, children)
}

export function SettingsList({ children }) {
  return h('div', { className: 'settings-list' }, children)
}

export function SettingsRow(props) {
  return h('div', { className: 'settings-row', 'data-field': props['data-field'] },
    h('div', { className: 'settings-row-text' },
      h('div', { className: 'settings-row-label' }, props.label),
      h('div', { className: 'settings-row-description' }, props.description),
      h('div', { className: 'settings-row-meta' }, props.meta)),
    h('div', { className: 'settings-row-control' }, props.control))
}

export function Input({ onChange, ...props }) {
  return h('input', { ...props, onChange: (event) => onChange(event.currentTarget.value) })
}

export function Switch({ checked, onChange, ...props }) {
  return h('input', { ...props, type: 'checkbox', role: 'switch', checked, onChange })
}
