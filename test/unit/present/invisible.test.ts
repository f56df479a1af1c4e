/**
 * One set of invisible characters for every place that judges or shows text: what the policy strips before
 * a deny rule matches is exactly what an approver is shown as an escape — in the terminal, the inbox page,
 * its signing data and the webhook.
 */
import { describe, expect, it } from 'vitest'
import { jsonData } from '../../../src/inbox/html.js'
import { Policy } from '../../../src/policy/index.js'
import { slackText } from '../../../src/present/approval-message.js'
import { INVISIBLE_CHARACTER } from '../../../src/present/invisible.js'
import { visible } from '../../../src/present/visible.js'

const SOFT_HYPHEN = '\u00ad'
const ISOLATE = '\u2066'
const OVERRIDE = '\u202e'
const TAG = '\u{e0041}'
const ARABIC_MARK = '\u061c'
const FILLER = '\u3164'

describe('invisible characters', () => {
  const hidden = [SOFT_HYPHEN, ISOLATE, OVERRIDE, TAG, ARABIC_MARK, FILLER, '\u200b', '\ufeff', '\u0085']

  it('are one set: each is invisible, ordinary text is not', () => {
    for (const ch of hidden) expect(INVISIBLE_CHARACTER.test(ch), ch.codePointAt(0)?.toString(16)).toBe(true)
    for (const ch of ['a', ' ', 'é', '中', '😀', '-']) expect(INVISIBLE_CHARACTER.test(ch), ch).toBe(false)
  })

  it('never hide a word from a deny rule', () => {
    const policy = Policy.permissive().layer('ops').denyExec('git push*')
    for (const ch of hidden) {
      expect(policy.checkExec(['git', `pu${ch}sh`, 'origin']).effect, ch.codePointAt(0)?.toString(16)).toBe(
        'deny',
      )
    }
  })

  it('are shown to a person as escapes, everywhere', () => {
    for (const ch of hidden) {
      const code = ch.codePointAt(0)?.toString(16) as string
      const text = `rm${ch} -rf`
      expect(visible(text)).toBe(`rm\\u{${code}} -rf`)
      expect(slackText(text, 100)).toBe(`rm\\u{${code}} -rf`)
      const data = jsonData('d', { target: text }).toString()
      expect(data).not.toContain(ch)
      expect(JSON.parse(/>(.*)<\/script>/s.exec(data)?.[1] ?? '')).toEqual({ target: text })
    }
  })
})
