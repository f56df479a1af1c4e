/**
 * Whole inbox pages rendered from rows full of hostile text: every element the page holds is one the
 * page's own template wrote; the text comes out as text.
 */
import { describe, expect, it } from 'vitest'
import type { ApprovalRow, InboxApproval, RunSummary, TimelineEntry } from '../../../src/audit/index.js'
import { approvalPage, inboxPage, runPage, runsPage } from '../../../src/inbox/pages.js'

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
  expect(tags(markup).filter((t) => t === 'img')).toEqual([])
  // The timeline's chart draws its own bars; nothing else may bring an svg.
  expect(
    tags(markup.replace(/<figure class="chart"[\s\S]*?<\/figure>/g, '')).filter((t) => t === 'svg'),
  ).toEqual([])
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
        plantedGit: [{ path: EVIL, what: EVIL }],
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
      {
        type: 'workspace',
        kind: 'outside-edit',
        runId: run.runId,
        step: 1,
        call: 0,
        root: 'ab'.repeat(32),
        files: 3,
        bytes: 10,
        detail: EVIL,
        at: new Date(),
      },
      {
        type: 'workspace',
        kind: 'restore',
        runId: run.runId,
        step: 1,
        call: 0,
        root: 'cd'.repeat(32),
        files: 2,
        bytes: 2048,
        detail: EVIL,
        at: new Date(),
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
        links: { from: { runId: EVIL, step: 1 }, into: [{ runId: EVIL, step: 2 }], branch: EVIL },
        plantedGit: [{ path: EVIL, what: EVIL }],
      },
      {},
      clock,
    )
    expectNoInjection(markup)
    // An edit found made outside the run is shown in its step, with the tree it was recorded as.
    expect(markup).toMatch(
      /<span class="verdict bad">changed<\/span> outside the run \(or by an attempt cut off\): <code>[^<]+<\/code> — recorded as tree abababababab and told to the model/,
    )
    // And where its workspace moved: the machine that restored it, the tree, its hash checked.
    expect(markup).toMatch(
      /<span class="verdict ok">restored<\/span> the workspace <code>[^<]+<\/code> from the snapshot store: tree cdcdcdcdcdcd, 2 files, 2 KiB, its hash checked/,
    )
  })
})

describe('inbox pages a person reads', () => {
  const step = (n: number, at: string, seconds: number, calls = 1): TimelineEntry => ({
    type: 'step',
    runId: 'r',
    step: n,
    toolCalls: Array.from({ length: calls }, (_, i) => ({
      id: `c${i}`,
      name: 'exec',
      args: { argv: ['npm', 'test'] },
    })),
    decision: 'exec `npm test` → exit 1',
    observation: '',
    inputTokens: 100,
    outputTokens: 1,
    startedAt: new Date(at),
    finishedAt: new Date(new Date(at).getTime() + seconds * 1000),
  })
  const quiet = { ...run, runId: 'r', goal: 'fix `add` in src/math.js', workspace: '/w', reason: undefined }
  const page = (
    summary: RunSummary,
    timeline: TimelineEntry[],
    extra: Partial<Parameters<typeof runPage>[0]> = {},
  ) =>
    runPage(
      { summary, timeline, answers: [], messages: [], temporal: { status: 'running' }, ...extra },
      {},
      clock,
    )

  it('counts in words that agree with the number, and says when the first step is still under way', () => {
    const first = page(
      { ...quiet, steps: 0, pendingApprovals: 1, commands: 1, inputTokens: 0, outputTokens: 0 },
      [],
    )
    expect(first).toContain('the first step is under way, 0 tokens, 1 command, 1 refused, 1 approval waiting')
    expect(first).toContain('<dd id="run-now">waiting for an approval</dd>')
    const ended = page({ ...quiet, status: 'finished', outcome: 'verified' }, [])
    expect(ended).toContain('<dd id="run-now">nothing: the run has ended</dd>')
    const later = page({ ...quiet, steps: 1, pendingApprovals: 0, commands: 2 }, [
      step(1, '2026-03-01T10:00:00Z', 2),
    ])
    expect(later).toContain('1 step, 15 tokens, 2 commands, 1 refused, 0 approvals waiting')
    expect(later).toContain('1 call · 101 tokens')
    expect(later).not.toMatch(/\(s\)/)
  })

  it('links the runs it was rewound from and into, names its branch, and warns of git files it planted', () => {
    const markup = page({ ...quiet, status: 'finished', outcome: 'verified' }, [], {
      links: {
        from: { runId: 'run-a', step: 2 },
        into: [{ runId: 'run-c', step: 4 }],
        branch: 'branch tether/r at 0334769 in /w',
      },
      plantedGit: [{ path: 'sub/.git/config', what: 'core.fsmonitor = touch /tmp/x' }],
    })
    expect(markup).toContain('rewound from <a href="/runs/run-a"><code>run-a</code></a> at step 2')
    expect(markup).toContain('rewound into <a href="/runs/run-c"><code>run-c</code></a> (from step 4)')
    expect(markup).toContain(
      '<code>branch tether/r at 0334769 in /w</code> (written by the worker, not pushed)',
    )
    expect(markup).toContain('the run wrote git files that make git run programs')
    expect(markup).toContain(
      '<li><code>sub/.git/config</code>: <code>core.fsmonitor = touch /tmp/x</code></li>',
    )
    const plain = page({ ...quiet, status: 'finished', outcome: 'verified' }, [], {
      links: { into: [] },
      plantedGit: [],
    })
    expect(plain).not.toContain('class="links"')
    expect(plain).not.toContain('role="alert"')
  })

  it('shows times in the viewer’s zone with UTC on hover, code as code, and what is in flight', () => {
    const markup = page(quiet, [step(1, '2026-03-01T10:00:00Z', 2)], {
      temporal: {
        status: 'running',
        inFlight: { kind: 'command', command: 'npm test', bytes: 3500, elapsedMs: 12_000 },
      },
    })
    expect(markup).toContain('title="2026-03-01 10:00 UTC" data-local>2026-03-01 19:00 GMT+9</time>')
    expect(markup).toContain('fix <code>add</code> in src/math.js')
    expect(markup).toContain('exec <code>npm test</code> → exit 1')
    expect(markup).toContain('running <code>npm test</code> for 12s, 3.4 KiB of output so far')
    const runs = runsPage({ runs: [{ ...quiet, waiting: false }] }, {}, {}, clock)
    expect(runs).toContain('data-local>2026-03-01 19:00 GMT+9</time>')
  })

  it('draws where the time went once there are two steps, and shows an approval once', () => {
    const approved: TimelineEntry = {
      type: 'approval',
      ...approval,
      approvalId: 'a1',
      runId: 'r',
      target: 'touch x',
      step: 2,
      requestedAt: new Date('2026-03-01T10:00:05Z'),
      decision: 'approved',
      decidedBy: 'alice',
      channel: 'update',
      decidedAt: new Date('2026-03-01T10:00:35Z'),
    }
    const answered: TimelineEntry = {
      type: 'policy',
      id: 7,
      runId: 'r',
      step: 2,
      call: 0,
      kind: 'decision',
      source: 'update',
      act: 'exec',
      target: 'touch x',
      effect: 'allow',
      decidedBy: 'alice',
      reason: 'approved by alice',
      at: new Date('2026-03-01T10:00:35Z'),
    }
    const one = page(quiet, [step(1, '2026-03-01T10:00:00Z', 2)])
    expect(one).not.toContain('class="chart"')
    const two = page({ ...quiet, finishedAt: new Date('2026-03-01T10:01:00Z') }, [
      step(1, '2026-03-01T10:00:00Z', 2),
      step(2, '2026-03-01T10:00:03Z', 40),
      approved,
      answered,
    ])
    const chart = /<figure class="chart"[\s\S]*?<\/figure>/.exec(two)?.[0] ?? ''
    expect(chart.match(/<li>/g)).toHaveLength(2)
    expect(chart).toContain('class="waited"')
    expect(chart).toContain('waited 30.0 s for an answer')
    // The approval's own entry says who answered; the policy record of that answer is not repeated.
    expect(two.match(/approved<\/strong> by alice/g)).toHaveLength(1)
    expect(two).not.toContain('approved by alice</')
    expect(two).toContain('after 30.0 s')
  })

  it('keeps tabs in file contents and output, never in a command; marks a diff line by line', () => {
    const markup = approvalPage(
      {
        approval: { ...approval, target: 'printf a\tb', tree: null },
        run: quiet,
        approvers: [],
        messages: [
          {
            seq: 1,
            role: 'tool',
            content: { role: 'tool', results: [{ name: 'read_file', output: 'a\tb' }] },
          },
        ],
        commands: [],
        answers: [],
        changes: {
          kind: 'git',
          status: ' M src/math.js\n',
          diff: 'diff --git a/src/math.js b/src/math.js\n@@ -1 +1 @@\n-\treturn a - b\n+\treturn a + b\n',
          elided: 0,
        },
      },
      {},
      clock,
    )
    expect(markup).toContain('<code class="target">printf a\\tb</code>')
    expect(markup).toContain('<pre>a\tb</pre>')
    expect(markup).toContain('<span class="del">-\treturn a - b</span>')
    expect(markup).toContain('<span class="add">+\treturn a + b</span>')
    expect(markup).toContain('<span class="hunk">@@ -1 +1 @@</span>')
  })

  it('warns the approver of git files the run planted, before its context', () => {
    const planted = approvalPage(
      {
        approval,
        run: quiet,
        approvers: [],
        messages: [],
        commands: [],
        answers: [],
        changes: { kind: 'unavailable', why: 'x' },
        plantedGit: [{ path: 'sub/.git/config', what: 'core.fsmonitor = touch /tmp/x' }],
      },
      {},
      clock,
    )
    const context = planted.slice(planted.indexOf('id="context-title"'))
    expect(context).toContain('the run wrote git files that make git run programs')
    expect(context).toContain(
      '<li><code>sub/.git/config</code>: <code>core.fsmonitor = touch /tmp/x</code></li>',
    )
    expect(answerPage(approval)).not.toContain('role="alert"')
  })

  it('offers one button per answer and chooses none; the key panel asks for no name', () => {
    const markup = answerPage(approval)
    const form = answerForm(markup)
    expect(form).not.toMatch(/checked|type="radio"/)
    expect(answers(form)).toEqual(['approve', 'deny', 'edit'])
    expect(markup).not.toContain('id="key-name"')
  })

  it('asks a budget approver for the new cap, and offers no edited command', () => {
    const budget: ApprovalRow = {
      ...approval,
      call: -1,
      act: 'budget',
      target: 'spent 0.010000 USD of a cost cap of 0.010000 USD',
      tree: undefined,
      rememberOffer: undefined,
    }
    const form = answerForm(answerPage(budget, { ...run, cost: 10_000 }))
    expect(form).toContain('<input type="text" id="raise-to" name="raise-to"')
    expect(answers(form)).toEqual(['approve', 'deny'])
    // An ask about a command has no cap to raise.
    expect(answerPage(approval)).not.toContain('raise-to')
  })
})

/** An approval's page with nothing else to show. */
function answerPage(asked: ApprovalRow, summary: RunSummary = run): string {
  const context = { approvers: [], messages: [], commands: [], answers: [] }
  return approvalPage(
    { approval: asked, run: summary, ...context, changes: { kind: 'unavailable', why: 'x' } },
    {},
    clock,
  )
}

/** The answer form of a page. */
function answerForm(markup: string): string {
  return /<form id="answer"[\s\S]*?<\/form>/.exec(markup)?.[0] ?? ''
}

/** The answers a form offers, a button each. */
function answers(form: string): Array<string | undefined> {
  return [...form.matchAll(/<button type="submit" name="decision" value="(\w+)"/g)].map((m) => m[1])
}
