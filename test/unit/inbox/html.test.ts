/** The one escaping helper of the inbox pages, against hostile strings. */
import { describe, expect, it } from 'vitest'
import { escapeHtml, Html, href, html, jsonData } from '../../../src/inbox/html.js'

const HOSTILE = [
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  "' onmouseover='alert(1)",
  '</textarea><svg onload=alert(1)>',
  '&lt;already escaped&gt;',
  '<!-- comment --><![CDATA[x]]>',
  'javascript:alert(1)',
]

/** Markup with its tags and entities removed: what a browser would show as text. */
function shown(markup: string): string {
  return markup
    .replace(/<[^>]*>/g, '')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
}

describe('escapeHtml and the html template', () => {
  it.each(HOSTILE)('keeps %j as text, in content and in quoted attributes', (text) => {
    const escaped = escapeHtml(text)
    expect(escaped).not.toMatch(/[<>"']/)
    const markup = html`<p title="${text}">${text}</p>`.markup
    // One element, as written: nothing the text held opened, closed or attributed anything.
    expect(markup.match(/</g)).toHaveLength(2)
    expect(markup.match(/"/g)).toHaveLength(2)
    expect(shown(markup)).toBe(text)
  })

  it('makes invisible characters visible, keeping newlines for <pre>', () => {
    expect(escapeHtml('rm\u200b -rf\u202e /\u0000\tx\ny')).toBe('rm\\u{200b} -rf\\u{202e} /\\u{0}\\tx\ny')
    expect(escapeHtml('\u2066isolate\u2069')).toBe('\\u{2066}isolate\\u{2069}')
  })

  it('joins arrays, drops null, undefined and false, and includes Html as it is', () => {
    const items = ['<a>', 'b&c']
    expect(html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>`.markup).toBe(
      '<ul><li>&lt;a&gt;</li><li>b&amp;c</li></ul>',
    )
    expect(html`${null}${undefined}${false}${0}${'x'}`.markup).toBe('0x')
    expect(html`${new Html('<b>ok</b>')}`.markup).toBe('<b>ok</b>')
  })

  it('embeds JSON that nothing can break out of, and reads back exactly', () => {
    const value = { target: '</script><script>alert(1)</script><!--', tree: 'a\r\nb\u2028c\u0000d&e' }
    const markup = jsonData('data', value).markup
    expect(markup.match(/<\/script>/gi)).toHaveLength(1)
    expect(markup).not.toContain('<!--')
    const body = /<script type="application\/json" id="data">([\s\S]*)<\/script>/.exec(markup)?.[1] ?? ''
    expect(JSON.parse(body)).toEqual(value)
  })

  it('encodes each path segment of a link', () => {
    expect(href('runs', '../admin?x=1#y')).toBe('/runs/..%2Fadmin%3Fx%3D1%23y')
    expect(href('approvals', 'a b')).toBe('/approvals/a%20b')
  })
})
