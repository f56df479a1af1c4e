/**
 * The one way inbox pages put text into HTML. Every value interpolated into an `html` template is
 * escaped — `& < > " '`, and invisible characters written out (see visible.ts) — unless it is itself
 * `Html` made by this module. So a goal, a command, a path or a model's reply can never become markup,
 * close an attribute or hide a character, whatever it contains.
 */
import { INVISIBLE_CLASS, visible } from '../present/index.js'

/** Markup that is safe to include as it is: only this module makes it. */
export class Html {
  /** @internal use `html` */
  constructor(readonly markup: string) {}
  toString(): string {
    return this.markup
  }
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

/** `text` as HTML text or a quoted attribute value, with invisible characters made visible. */
export function escapeHtml(text: string, options: { tabs?: boolean } = {}): string {
  return visible(text, { lines: true, ...options }).replace(/[&<>"']/g, (ch) => ENTITIES[ch] as string)
}

/**
 * Text that is laid out, not run — a file's contents, a command's output, a diff — escaped like any other,
 * except that a tab stays a tab (in a command, a tab is part of a word and shows as `\t`).
 */
export function laidOut(text: string): Html {
  return new Html(escapeHtml(text, { tabs: true }))
}

/**
 * Prose that marks code the Markdown way — the model's words, reasons, tether's own summaries
 * (`` `npm test` → exit 0 ``) — with each backtick span as `<code>`; everything else escaped as text.
 */
export function prose(text: string): Html {
  const parts = text.split(/`([^`\n]+)`/)
  return html`${parts.map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : part))}`
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[]

function piece(value: Value): string {
  if (value === null || value === undefined || value === false) return ''
  if (value instanceof Html) return value.markup
  if (Array.isArray(value)) return value.map(piece).join('')
  return escapeHtml(String(value))
}

const JSON_ESCAPED = new RegExp(`[<>&${INVISIBLE_CLASS}]`, 'gu')

/** A template whose values are escaped (arrays joined, `null`/`undefined`/`false` left out). */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let markup = strings[0] ?? ''
  for (let i = 0; i < values.length; i++) markup += piece(values[i] as Value) + (strings[i + 1] ?? '')
  return new Html(markup)
}

/**
 * A value for a `<script type="application/json">` element: JSON with `<`, `>`, `&`, the line separators and
 * invisible characters written as `\u` escapes, so nothing in it can end the element, start a comment or
 * hide in the page source. The browser reads the exact strings back (JSON keeps control characters as
 * escapes, where HTML text would normalise them).
 */
export function jsonData(id: string, value: unknown): Html {
  const json = JSON.stringify(value).replace(JSON_ESCAPED, (ch) =>
    // Astral characters (tags) as their two UTF-16 escapes, which JSON reads back as the same character.
    [...ch.split('')].map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
  )
  return html`<script type="application/json" id="${id}">${new Html(json)}</script>`
}

/** A link path with each segment encoded: ids chosen by run starters cannot change where a link goes. */
export function href(...segments: string[]): string {
  return `/${segments.map(encodeURIComponent).join('/')}`
}
