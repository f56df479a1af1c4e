/**
 * Whole inbox pages rendered from rows full of hostile text: every element the page holds is one the
 * page's own template wrote; the text comes out as text.
 */
import { describe, expect, it } from 'vitest'
import type { ApprovalRow, InboxApproval, RunSummary, TimelineEntry } from '../../../src/audit/index.js'
import { approvalPage, inboxPage, runPage } from '../../../src/inbox/pages.js'

const EVIL = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\u202e'
const clock = { now: new Date('2026-03-01T12:00:00Z'), timeZone: 'Asia/Tokyo' }

const approval: ApprovalRow = {
  approvalId: `a-${EVIL}`,
  runId: `run-${EVIL}`,
  step: 2,
  call: 0,
  act: 'exec',
  target: `touch ${EVIL}`,
  tree: `ask  exec touch ${EVIL}`,
  rule: `touch*${EVIL}`,
  layer: EVIL,
  approvers: ['alice'],
  requestedAt: new Date('2026-03-01T11:00:00Z'),
  deadline: new Date('2026-03-01T15:00:00Z'),
  approvalsRequired: 1,
  rememberOffer: { exact: `touch ${EVIL}`, wider: EVIL },
  identity: 'signed',
  actionDigest: 'ab'.repeat(32),
  fromFloor: true,
}

const run: RunSummary = {
  runId: approval.runId,
  goal: EVIL,
  workspace: `/tmp/${EVIL}`,
  status: 'running',
  startedAt: new Date('2026-03-01T10:00:00Z'),
  steps: 2,
  inputTokens: 10,
  outputTokens: 5,
  refusals: 1,
  commands: 1,
  pendingApprovals: 1,
  reason: EVIL,
}

const capture = { text: EVIL, elided: 0, bytes: 10, lines: 1, sha256: 'c'.repeat(64) }
const command = {
  runId: run.runId,
  step: 1,
  call: 0,
  attempt: 1,
  kind: 'tool' as const,
  argv: ['echo', EVIL],
  cwd: '/tmp',
  status: 'exited' as const,
  exitCode: 0,
  durationMs: 1200,
  stdout: capture,
  stderr: capture,
  startedAt: new Date(),
  finishedAt: new Date(),
}
const messages = [
  { seq: 0, role: 'user', content: { role: 'user', content: EVIL } },
  {
    seq: 1,
    role: 'assistant',
    content: {
      role: 'assistant',
      text: EVIL,
      toolCalls: [{ id: 'c', name: 'exec', args: { argv: ['touch', EVIL] } }],
    },
  },
  { seq: 2, role: 'tool', content: { role: 'tool', results: [{ callId: 'c', name: 'exec', output: EVIL }] } },
]

/** The opening tags of a page, by name: hostile text must add none. */
function tags(markup: string): string[] {
  return [...markup.matchAll(/<([a-z][a-z0-9]*)/gi)].map((m) => (m[1] as string).toLowerCase())
}

function expectNoInjection(markup: string) {
  expect(tags(markup).filter((t) => t === 'img' || t === 'svg')).toEqual([])
  // The page's own two scripts: the bundle and (on an approval page) its JSON data.
  expect(tags(markup).filter((t) => t === 'script').length).toBeLessThanOrEqual(2)
  expect(markup).not.toContain('\u202e')
  expect(markup).toContain(
    '&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;\\u{202e}',
  )
}

describe('inbox pages with hostile text', () => {
  it('the inbox', () => {
    const item: InboxApproval = { ...approval, goal: EVIL, workspace: run.workspace, forMe: true }
    const markup = inboxPage(
      { items: [item], total: 1, forMe: 1, page: 1, pageSize: 50 },
      { name: 'alice' },
      clock,
    )
    expectNoInjection(markup)
    // The deadline in UTC, in the viewer's zone and as time left.
    expect(markup).toContain('2026-03-01 15:00 UTC (2026-03-02 00:00 GMT+9 your time), in 3h 0m')
    expect(markup).toContain('waiting for you')
  })

  it('an approval, its data for the signing script, and its context', () => {
    const markup = approvalPage(
      {
        approval,
        run,
        approvers: [{ name: 'alice', keys: ['ed25519:x'] }],
        argv: ['touch', EVIL],
        messages,
        commands: [command],
        answers: [],
        changes: { kind: 'git', status: ` M ${EVIL}\n`, diff: `+${EVIL}\n`, elided: 0 },
      },
      { name: EVIL },
      clock,
    )
    expectNoInjection(markup)
    const data = /<script type="application\/json" id="approval-data">([\s\S]*?)<\/script>/.exec(markup)?.[1]
    expect(JSON.parse(data ?? '')).toMatchObject({ target: approval.target, tree: approval.tree })
    // The approver sees that the rule asking is the operator's, not the run's own.
    expect(markup).toMatch(
      /in layer <code>[^<]*<\/code> \(the worker&#39;s floor\)|in layer <code>[^<]*<\/code> \(the worker's floor\)/,
    )
  })

  it('a run, its timeline and transcript', () => {
    const timeline: TimelineEntry[] = [
      {
        type: 'step',
        runId: run.runId,
        step: 1,
        toolCalls: [{ id: 'c', name: 'exec', args: { argv: ['echo', EVIL] } }],
        decision: EVIL,
        observation: EVIL,
        inputTokens: 1,
        outputTokens: 1,
        startedAt: new Date(),
        finishedAt: new Date(),
      },
      { type: 'exec', ...command },
      {
        type: 'policy',
        id: 1,
        runId: run.runId,
        step: 1,
        call: 0,
        kind: 'refusal',
        source: 'policy',
        act: 'exec',
        target: EVIL,
        effect: 'deny',
        rule: EVIL,
        layer: EVIL,
        reason: EVIL,
        at: new Date(),
      },
      { type: 'gate', runId: run.runId, step: 1, kind: 'gate_phase_failed', detail: EVIL, at: new Date() },
      {
        type: 'approval',
        ...approval,
        decision: 'approved',
        decidedBy: EVIL,
        reason: EVIL,
        replacement: [EVIL],
      },
    ]
    const markup = runPage(
      {
        summary: run,
        timeline,
        answers: [],
        messages,
        temporal: { status: EVIL },
        temporalLink: `http://ui/${EVIL}`,
      },
      {},
      clock,
    )
    expectNoInjection(markup)
  })
})
