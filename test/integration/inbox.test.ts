/**
 * The approvals inbox in a real browser (Debian's Chromium, driven by playwright-core) against real runs
 * on the dev server, at a desktop window and at a phone's: a run reaches an ask, the page shows it in
 * context, the approver imports their key once — and signs as the name the run's policy gives that key —
 * and answers, signed in the browser, and the run goes on; deny with guidance, an edited command the policy
 * denies, a tampered signature; the run page follows a run live; no console errors; every form works from
 * the keyboard and has labels; on a phone nothing scrolls sideways and every button is a thumb's size;
 * nothing a model or run starter writes becomes markup. Screenshots of every page at both sizes go to
 * test-artefacts/inbox/ (kept by CI) for a person to look at.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest'
import type { ApprovalRow } from '../../src/audit/index.js'
import { createKey, loadKey } from '../../src/identity/keyring.js'
import { addToken, type Inbox, readTokens, startInbox } from '../../src/inbox/index.js'
import { Policy } from '../../src/policy/index.js'
import { FIX_ADD, npmWorkspace, startRun, useAgentHarness, writeScript } from '../support/agent.js'
import { launchChromium, screenshot, VIEWPORTS, type ViewportName } from '../support/browser.js'

const harness = useAgentHarness()
let keys: string
let alicePem: string
let policy: Policy
let inbox: Inbox
let browser: Browser

beforeAll(async () => {
  keys = await mkdtemp(join(tmpdir(), 'tether-inbox-keys-'))
  createKey('alice', keys)
  createKey('mallory', keys)
  alicePem = join(keys, 'alice.pem')
  policy = Policy.tiered()
    .withApprovers([{ name: 'alice', keys: [loadKey('alice', keys).publicKey] }])
    .layer('base')
    .denyExec('rm*')
    .layer('project')
    .allowExec('npm test*')
    .allowWrite('src/*')
  inbox = await startInbox({
    audit: harness.audit,
    client: harness.client,
    namespace: inject('namespace'),
    port: 0,
    temporalUi: 'http://127.0.0.1:8233',
    liveIntervalMs: 250,
  })
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  await inbox?.close()
  if (keys) await rm(keys, { recursive: true, force: true })
})

/** Every page opened in a test; after it, none may have logged an error or opened a dialog. */
const opened: Array<{ context: BrowserContext; problems: string[] }> = []
afterEach(async () => {
  const problems = opened.flatMap((o) => o.problems)
  for (const { context } of opened.splice(0)) await context.close()
  expect(problems).toEqual([])
})

/** A browser window of an approver in New York (so "your time" differs from UTC), on a desktop or a phone. */
async function open(path: string, screen: ViewportName = 'desktop'): Promise<Page> {
  const context = await browser.newContext({
    timezoneId: 'America/New_York',
    locale: 'en-US',
    ...VIEWPORTS[screen],
  })
  const problems: string[] = []
  opened.push({ context, problems })
  const page = await context.newPage()
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`)
  })
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`)
    void dialog.dismiss()
  })
  // Signed in the way a person is: through the link `tether dev` prints, which carries the stack's token.
  await page.goto(inbox.loginUrl)
  await page.goto(`${inbox.url}${path}`)
  return page
}

/**
 * Imports alice's key file, under another file name: the name it signs as is the one the policy gives the
 * key, never what the file or the person says.
 */
async function importKey(page: Page): Promise<void> {
  // Unfolded by itself where an answer needs a signature and the browser has no key.
  await expect.poll(() => page.locator('#key-import').isVisible()).toBe(true)
  await page.getByLabel('Private key file').setInputFiles({
    name: 'my-laptop.pem',
    mimeType: 'application/x-pem-file',
    buffer: await readFile(alicePem),
  })
  await page.getByRole('button', { name: 'Import key' }).click()
  await expect
    .poll(() => page.locator('#key-status').textContent())
    .toMatch(/^Signing as alice with key SHA256:/)
  expect(await page.locator('#key-summary').textContent()).toBe('Signing as alice')
}

/** What a phone must never do: scroll sideways, or offer a button smaller than a thumb. */
async function expectFitsAPhone(page: Page): Promise<void> {
  // Against the screen's width: a phone widens its layout to fit what overflows. Evaluated in the page (the
  // tests are compiled without the DOM's types).
  const width = (await page.evaluate('document.documentElement.scrollWidth')) as number
  const overflow = width - (page.viewportSize()?.width ?? 0)
  expect(overflow, 'the page scrolls sideways').toBeLessThanOrEqual(0)
  const small: string[] = []
  for (const button of await page.locator('button:visible, a.button:visible').all()) {
    const box = await button.boundingBox()
    if (box && box.height < 44) small.push(`${(await button.textContent())?.trim()} (${box.height}px)`)
  }
  expect(small).toEqual([])
}

const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })

async function run(turns: unknown[], options: { goal?: string; git?: boolean; verify?: boolean } = {}) {
  const ws = await npmWorkspace()
  if (options.git) {
    const git = (...args: string[]) =>
      execFileSync('git', args, {
        cwd: ws.path,
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: 't',
          GIT_AUTHOR_EMAIL: 't@x',
          GIT_COMMITTER_NAME: 't',
          GIT_COMMITTER_EMAIL: 't@x',
        },
      })
    git('init', '-q')
    git('add', '-A')
    git('commit', '-qm', 'fixture')
  }
  const model = `scripted:${await writeScript(ws.path, { turns } as never)}`
  const handle = await startRun(
    harness.client,
    harness.taskQueue,
    {
      goal: options.goal ?? 'make npm test pass',
      workspace: ws.path,
      model,
      ...(options.verify ? { verification: { command: ['npm', 'test'] } } : {}),
    },
    policy,
  )
  return { ws, handle }
}

async function waitingApproval(runId: string): Promise<ApprovalRow> {
  let row: ApprovalRow | undefined
  await expect
    .poll(
      async () => {
        row = (await harness.audit.pendingApprovals({ runId }))[0]
        return row !== undefined
      },
      { timeout: 60_000 },
    )
    .toBe(true)
  return row as ApprovalRow
}

const HOSTILE_GOAL = 'Fix <b>add</b> & "friends" <script>alert("goal")</script>'

describe('the approvals inbox in a browser', () => {
  it('shows a real ask in context; approving signs in the browser and the run goes on to verified, live', async () => {
    const { ws, handle } = await run(
      [
        { toolCalls: [exec('npm', 'test')] },
        {
          toolCalls: [FIX_ADD],
        },
        { toolCalls: [exec('touch', 'approved.txt')] },
        { text: 'fixed' },
      ],
      { goal: HOSTILE_GOAL, git: true, verify: true },
    )
    try {
      const runId = handle.workflowId
      const row = await waitingApproval(runId)
      // What a command could have left while the run went: the approver is told before answering.
      mkdirSync(join(ws.path, 'sub/.git'), { recursive: true })
      writeFileSync(join(ws.path, 'sub/.git/config'), '[core]\n\tfsmonitor = "touch planted"\n')

      // The run page, opened while the run waits, is never reloaded: it must follow the run by itself.
      const runPage = await open(`/runs/${runId}`)
      await expect.poll(() => runPage.locator('#run-outcome').textContent()).toMatch(/running/)
      await expect.poll(() => runPage.locator('.timeline .approval').textContent()).toMatch(/waiting/)
      expect(
        await runPage.getByRole('link', { name: 'Open this run in the Temporal UI' }).getAttribute('href'),
      ).toBe(`http://127.0.0.1:8233/namespaces/${inject('namespace')}/workflows/${runId}`)

      const page = await open('/')
      const card = page.locator('.card', { has: page.locator(`a[href="/approvals/${row.approvalId}"]`) })
      await expect.poll(() => card.count()).toBe(1)
      const text = (await card.textContent()) ?? ''
      expect(text).toContain(HOSTILE_GOAL)
      expect(text).toContain(ws.path)
      expect(text).toContain('touch approved.txt')
      expect(text).toMatch(/the default for exec/)
      expect(text).toContain('exactly touch approved.txt')
      // The deadline in UTC, in the viewer's zone (New York), as time left and with the limit that sets it
      // (the default 4h wall-time budget ends before the 24h approval timeout).
      expect(text).toMatch(
        /\d{4}-\d\d-\d\d \d\d:\d\d UTC \(\d{4}-\d\d-\d\d \d\d:\d\d GMT-[45] your time\), in 3h \d+m \(set by the run's wall-time budget\)/,
      )
      await expect.poll(() => page.locator('main script, main b, main img').count()).toBe(0)
      await screenshot(page, 'inbox', 'desktop-1-inbox')

      await card.getByRole('link').first().click()
      await page.waitForURL(`**/approvals/${row.approvalId}`)
      const context = (await page.locator('#approval-context').textContent()) ?? ''
      expect(context).toMatch(/npm test → exit 1/)
      expect(context).toContain('edit_file')
      const changes = (await page.locator('section[aria-labelledby="context-title"]').textContent()) ?? ''
      expect(changes).toContain('M src/math.js')
      expect(await page.getByRole('alert').textContent()).toContain(
        'sub/.git/config: core.fsmonitor = "touch planted"',
      )
      expect(changes).toContain('+  return a + b')
      expect(await page.locator('.tree').textContent()).toContain('touch approved.txt')

      // The facts first (on a desktop, beside the answer), then the answer: a button each, none chosen.
      const facts = await page.locator('#what-title').boundingBox()
      const answer = await page.locator('#answer-title').boundingBox()
      expect(facts?.x).toBeLessThan(answer?.x ?? 0)
      expect(await page.locator('#answer input:checked').count()).toBe(0)
      await screenshot(page, 'inbox', 'desktop-2-approval')
      // Approving without a key says so, and the words go once the key is in.
      await page.getByRole('button', { name: 'Approve', exact: true }).click()
      await expect
        .poll(() => page.locator('#answer-result').textContent())
        .toBe('This run needs your signature: import your key first.')
      await importKey(page)
      expect(await page.locator('#answer-result').textContent()).toBe('')
      await page.getByRole('button', { name: 'Approve', exact: true }).click()
      await expect
        .poll(() => page.locator('#answer-result').textContent(), { timeout: 30_000 })
        .toBe('Approved; the run judges it again and goes on.')

      expect(await handle.result()).toMatchObject({ outcome: 'verified' })
      expect(existsSync(join(ws.path, 'approved.txt'))).toBe(true)
      await expect
        .poll(() => runPage.locator('#run-outcome').textContent(), { timeout: 30_000 })
        .toMatch(/verified/)
      const timeline = ((await runPage.locator('.timeline').textContent()) ?? '').replace(/\s+/g, ' ')
      expect(timeline).toMatch(/approved by alice via update/)
      expect(timeline).toMatch(/alice approved via update at .* signature verified \(SHA256:[0-9a-f]{32}\)/)
      expect(timeline).toMatch(/gate passed/)
      expect(timeline).toMatch(/sha256 [0-9a-f]{64}/)
      // Each approval once; every time in the viewer's zone, UTC on hover.
      expect(await runPage.locator('.timeline li.approval').count()).toBe(1)
      const started = runPage.locator('#run-live dd time[data-local]').first()
      expect(await started.textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d GMT-[45]$/)
      expect(await started.getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/)
      // Three steps: the chart of where the time went.
      expect(await runPage.locator('figure.chart li').count()).toBeGreaterThanOrEqual(3)
      await screenshot(runPage, 'inbox', 'desktop-3-run')
      // Loaded again once the run is over: its branch, and the git file planted in its folder.
      await runPage.reload()
      expect(await runPage.locator('ul.links').textContent()).toMatch(
        new RegExp(`branch tether/${runId} at [0-9a-f]{40} in .*\\(written by the worker, not pushed\\)`),
      )
      expect(await runPage.getByRole('alert').textContent()).toContain(
        'sub/.git/config: core.fsmonitor = "touch planted"',
      )
    } finally {
      await ws.cleanup()
    }
  })

  it('on a phone: denies with guidance, by keyboard alone, and the guidance reaches the model', async () => {
    const { ws, handle } = await run([{ toolCalls: [exec('touch', 'denied.txt')] }, { text: 'understood' }])
    try {
      const row = await waitingApproval(handle.workflowId)
      const page = await open(`/approvals/${row.approvalId}`, 'phone')
      await expectFitsAPhone(page)
      // On a phone, one column: what is asked, the answer, the key to sign with, then the context.
      const order: number[] = []
      for (const id of ['#what-title', '#answer-title', '#key-title', '#context-title']) {
        order.push((await page.locator(id).boundingBox())?.y ?? -1)
      }
      expect(order).toEqual([...order].sort((a, b) => a - b))
      await screenshot(page, 'inbox', 'phone-2-approval-no-key')
      await importKey(page)
      // Once imported, the key folds away: the answer is what the page is about.
      expect(await page.locator('#key-panel').getAttribute('open')).toBeNull()
      await screenshot(page, 'inbox', 'phone-3-approval')
      // Now the inbox knows who is looking: this approval is theirs, and says so.
      await page.goto(`${inbox.url}/`)
      expect(await page.locator('#inbox-summary').textContent()).toMatch(/ of them for alice;/)
      await expectFitsAPhone(page)
      await screenshot(page, 'inbox', 'phone-1-inbox')
      const mine = page.locator('.card.for-me', {
        has: page.locator(`a[href="/approvals/${row.approvalId}"]`),
      })
      expect(await mine.locator('.badge').textContent()).toBe('waiting for you')
      await page.goto(`${inbox.url}/approvals/${row.approvalId}`)
      await expect.poll(() => page.locator('#key-status').textContent()).toMatch(/^Signing as alice/)

      // Every control has a label; every button says what it does.
      const unlabelled: string[] = []
      for (const control of await page.locator('input, select, textarea').all()) {
        const id = await control.getAttribute('id')
        if (!id || (await page.locator(`label[for="${id}"]`).count()) === 0) unlabelled.push(id ?? '(no id)')
      }
      for (const button of await page.locator('button').all()) {
        if (!(await button.textContent())?.trim()) unlabelled.push('a button without text')
      }
      expect(unlabelled).toEqual([])

      const focused = () => page.locator(':focus').getAttribute('id')
      await page.getByLabel(/Guidance for the model/).focus()
      const guidance = 'Do not create files at the root; write under src/ instead.'
      await page.keyboard.type(guidance)
      await page.keyboard.press('Tab')
      expect(await focused()).toBe('remember')
      await page.keyboard.press('Tab')
      expect(await focused()).toBe('answer-approve')
      await page.keyboard.press('Tab')
      expect(await focused()).toBe('answer-deny')
      await page.keyboard.press('Enter')
      await expect
        .poll(() => page.locator('#answer-result').textContent(), { timeout: 30_000 })
        .toBe('Denied; the model reads your guidance.')

      expect(await handle.result()).toMatchObject({ outcome: 'finished' })
      expect(existsSync(join(ws.path, 'denied.txt'))).toBe(false)
      const observed = (await harness.audit.loadMessages(handle.workflowId)).find((m) => m.role === 'tool')
      expect(JSON.stringify(observed?.content)).toContain(`denied by alice: ${guidance}`)
      const runPage = await open(`/runs/${handle.workflowId}`, 'phone')
      expect(await runPage.locator('.transcript').textContent()).toContain(guidance)
      expect(await runPage.locator('.refusals').textContent()).toContain(guidance)
      await expectFitsAPhone(runPage)
      await screenshot(runPage, 'inbox', 'phone-4-run')

      // The run list, filtered through its form.
      const runs = await open('/runs', 'phone')
      await runs.getByLabel('Status').selectOption('finished')
      await runs.getByLabel('Outcome').selectOption('finished')
      await runs.getByLabel('Waiting for an approval').selectOption('no')
      await runs.getByRole('button', { name: 'Filter' }).click()
      await runs.waitForURL('**/runs?status=finished&outcome=finished&waiting=no')
      expect(await runs.locator('table.runs').textContent()).toContain(handle.workflowId)
      await expectFitsAPhone(runs)
      await screenshot(runs, 'inbox', 'phone-5-runs')
      await runs.getByLabel('Waiting for an approval').selectOption('yes')
      await runs.getByRole('button', { name: 'Filter' }).click()
      await runs.waitForURL('**/runs?status=finished&outcome=finished&waiting=yes')
      expect(await runs.locator('main').textContent()).not.toContain(handle.workflowId)
    } finally {
      await ws.cleanup()
    }
  })

  it('on a phone: refuses an edited command the policy denies and says why; an allowed edit runs instead', async () => {
    const { ws, handle } = await run([{ toolCalls: [exec('touch', 'asked.txt')] }, { text: 'ok' }])
    try {
      const row = await waitingApproval(handle.workflowId)
      const page = await open(`/approvals/${row.approvalId}`, 'phone')
      await importKey(page)
      await page.getByText('Approve an edited command instead').click()
      const edit = page.getByLabel(/Edited command, one argument per line/)
      expect(await edit.inputValue()).toBe('touch\nasked.txt')
      await edit.fill('rm\n-rf\nsrc')
      expect(await page.locator('#replacement-preview').textContent()).toBe('Will run: ["rm","-rf","src"]')
      await expectFitsAPhone(page)
      await screenshot(page, 'inbox', 'phone-6-edit')
      await page.getByRole('button', { name: 'Approve the edited command' }).click()
      await expect
        .poll(() => page.locator('#answer-result').textContent(), { timeout: 30_000 })
        .toMatch(
          /^The edited command rm -rf src is denied by rule `rm\*` in layer `base`: .*An approval never crosses a deny/,
        )
      expect(await page.locator('#answer-result').getAttribute('class')).toBe('error')
      expect((await harness.audit.approval(row.approvalId))?.decision).toBeUndefined()

      await edit.fill('touch\nedited.txt')
      await page.getByRole('button', { name: 'Approve the edited command' }).click()
      await expect
        .poll(() => page.locator('#answer-result').textContent(), { timeout: 30_000 })
        .toBe('Approved with the edited command touch edited.txt; the run judges it again and goes on.')
      expect(await handle.result()).toMatchObject({ outcome: 'finished' })
      expect(existsSync(join(ws.path, 'edited.txt'))).toBe(true)
      expect(existsSync(join(ws.path, 'asked.txt'))).toBe(false)
      expect(await harness.audit.approval(row.approvalId)).toMatchObject({
        target: 'touch asked.txt',
        replacement: ['touch', 'edited.txt'],
      })
      await expect
        .poll(() => page.locator('#approval-status').textContent(), { timeout: 10_000 })
        .toMatch(/the edited command touch edited.txt ran instead/)
    } finally {
      await ws.cleanup()
    }
  })

  it('signs as the name the policies give the key, found from the inbox list too; a key on no list says so', async () => {
    const { ws, handle } = await run([{ toolCalls: [exec('touch', 'named.txt')] }, { text: 'ok' }])
    try {
      const row = await waitingApproval(handle.workflowId)
      const page = await open('/', 'phone')
      // Folded on the list, where nothing needs signing yet.
      expect(await page.locator('#key-panel').getAttribute('open')).toBeNull()
      await page.getByText('Your signing key').click()
      await page.getByLabel('Private key file').setInputFiles(join(keys, 'mallory.pem'))
      await page.getByRole('button', { name: 'Import key' }).click()
      await expect
        .poll(() => page.locator('#key-status').textContent())
        .toMatch(/^This key \(SHA256:[0-9a-f]{32}\) is on no run's approver list yet/)
      await page.getByRole('button', { name: 'Forget this key' }).click()
      await page.getByLabel('Private key file').setInputFiles(alicePem)
      await page.getByRole('button', { name: 'Import key' }).click()
      await expect.poll(() => page.locator('#key-summary').textContent()).toBe('Signing as alice')
      await page.reload()
      expect(await page.locator('#inbox-summary').textContent()).toMatch(/ of them for alice;/)
      const mine = page.locator('.card.for-me', {
        has: page.locator(`a[href="/approvals/${row.approvalId}"]`),
      })
      expect(await mine.count()).toBe(1)
      await handle.cancel()
    } finally {
      await ws.cleanup()
    }
  })

  it('shows what a run changed from its snapshots when the workspace is no git repository', async () => {
    const { ws, handle } = await run([
      { toolCalls: [{ name: 'write_file', args: { path: 'src/note.txt', content: 'noted\n' } }] },
      { toolCalls: [exec('touch', 'asked.txt')] },
      { text: 'ok' },
    ])
    try {
      const row = await waitingApproval(handle.workflowId)
      const page = await open(`/approvals/${row.approvalId}`)
      const changes = (await page.locator('section[aria-labelledby="context-title"]').textContent()) ?? ''
      expect(changes).toContain("From the run's snapshots: step 0 → step 1.")
      expect(changes).toContain('A src/note.txt')
      expect(changes).toContain('+noted')
      await handle.cancel()
      await handle.result().catch(() => undefined)
    } finally {
      await ws.cleanup()
    }
  })

  it('shows the run refusing a tampered signature, and model text stays text', async () => {
    const hostile = '<img src=x onerror=alert(1)>\u200b.txt'
    const { ws, handle } = await run([{ toolCalls: [exec('touch', hostile)] }, { text: 'ok' }])
    try {
      const row = await waitingApproval(handle.workflowId)
      const page = await open(`/approvals/${row.approvalId}`)
      expect(await page.locator('h1').textContent()).toContain(
        "touch $'<img src=x onerror=alert(1)>\\u200b.txt'",
      )
      expect(await page.locator('main img').count()).toBe(0)
      await importKey(page)
      // Whatever leaves the browser is altered on the way: one character of the signature.
      await page.route('**/api/approvals/*/answer', async (route) => {
        const body = JSON.parse(route.request().postData() ?? '{}')
        const value: string = body.signature.value
        body.signature.value = `${value[0] === 'A' ? 'B' : 'A'}${value.slice(1)}`
        await route.continue({ postData: JSON.stringify(body) })
      })
      await page.getByRole('button', { name: 'Approve', exact: true }).click()
      await expect
        .poll(() => page.locator('#answer-result').textContent(), { timeout: 30_000 })
        .toMatch(
          /^The run refused the answer \(BadSignature\): the signature does not match this run, approval, action and answer/,
        )
      expect((await harness.audit.approval(row.approvalId))?.decision).toBeUndefined()

      await page.unroute('**/api/approvals/*/answer')
      await page.getByLabel(/Guidance for the model/).fill('no')
      await page.getByRole('button', { name: 'Deny with guidance' }).click()
      await expect
        .poll(() => page.locator('#answer-result').textContent(), { timeout: 30_000 })
        .toMatch(/^Denied/)
      await handle.result()
    } finally {
      await ws.cleanup()
    }
  })
})

/** One HTTP request as any client (or attacker) may send it: every header as given, Host included. */
function call(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: options.method ?? 'GET', headers: options.headers ?? {} },
      (res) => {
        let body = ''
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString()
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

describe('the inbox list', () => {
  it('puts what the viewer may answer first, then the most urgent, and pages through everything', async () => {
    const now = Date.now()
    const ids: string[] = []
    for (const [i, approvers] of [['bob'], ['alice'], [], ['bob'], ['alice']].entries()) {
      const runId = `inbox-order-${now}-${i}`
      await harness.audit.recordRunStarted({
        runId,
        goal: `order ${i}`,
        workspace: '/nowhere',
        contract: {},
        policy: {},
        startedAt: new Date(now),
      })
      const approvalId = `${runId}-a`
      ids.push(approvalId)
      await harness.audit.recordApprovalRequested({
        approvalId,
        runId,
        step: 1,
        call: 0,
        act: 'exec',
        target: `touch ${i}`,
        tree: null,
        requestedAt: new Date(now),
        // Earlier index, earlier deadline.
        deadline: new Date(now + 60_000 * (i + 1)),
        approvers,
      })
    }
    const order = (items: Array<{ approvalId: string }>) =>
      items.map((a) => a.approvalId).filter((id) => ids.includes(id))
    const forAlice = await harness.audit.inboxApprovals({ viewer: 'alice', limit: 1000 })
    expect(order(forAlice.items)).toEqual([ids[1], ids[2], ids[4], ids[0], ids[3]])
    expect(forAlice.items.find((a) => a.approvalId === ids[1])).toMatchObject({
      forMe: true,
      goal: 'order 1',
      workspace: '/nowhere',
    })
    const anonymous = await harness.audit.inboxApprovals({ limit: 1000 })
    expect(order(anonymous.items)).toEqual(ids)
    expect(anonymous.forMe).toBe(0)
    const pages = await Promise.all(
      [0, 1, 2].map((page) => harness.audit.inboxApprovals({ viewer: 'alice', limit: 2, offset: page * 2 })),
    )
    expect(pages.flatMap((p) => p.items)).toHaveLength(Math.min(6, forAlice.total))
    await harness.audit.pool.query('delete from runs where run_id like $1', [`inbox-order-${now}-%`])
  })
})

describe('inbox access over HTTP', () => {
  const answer = (approver: string) => JSON.stringify({ approvalId: 'a-none', decision: 'approve', approver })

  it('on loopback: the stack’s token, a loopback Host only, strict headers, answers only as JSON from its own pages', async () => {
    const token = new URL(inbox.loginUrl).searchParams.get('token') as string
    // Any process on this machine reaches loopback; without the token it sees nothing.
    const stranger = await call(`${inbox.url}/`)
    expect(stranger.status).toBe(401)
    expect(stranger.body).not.toContain('approval')
    expect(
      (await call(`${inbox.url}/api/approvals/a-none/answer`, { method: 'POST', body: answer('alice') }))
        .status,
    ).toBe(401)
    const login = await call(inbox.loginUrl)
    expect(login.status).toBe(303)
    const cookie = String(login.headers['set-cookie']).split(';')[0] as string
    const page = await call(`${inbox.url}/`, { headers: { cookie } })
    expect(page.status).toBe(200)
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'; script-src 'self'/)
    expect(page.headers['x-frame-options']).toBe('DENY')
    expect(
      (await call(`${inbox.url}/`, { headers: { host: `attacker.example:${inbox.port}`, cookie } })).status,
    ).toBe(421)

    const post = (headers: Record<string, string>) =>
      call(`${inbox.url}/api/approvals/a-none/answer`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, ...headers },
        body: answer('alice'),
      })
    const json = { 'content-type': 'application/json' }
    expect((await post({ 'content-type': 'text/plain' })).status).toBe(403)
    expect((await post({ ...json, origin: 'http://attacker.example' })).status).toBe(403)
    expect((await post({ ...json, 'sec-fetch-site': 'cross-site' })).status).toBe(403)
    const refused = await post({ ...json, origin: inbox.url })
    expect(refused.status).toBe(200)
    expect(JSON.parse(refused.body)).toEqual({
      ok: false,
      type: 'UnknownApproval',
      message: 'no approval a-none',
    })
  })

  it('behind a proxy: the identity header names the person, and nobody answers as someone else', async () => {
    const proxied = await startInbox({
      audit: harness.audit,
      client: harness.client,
      namespace: inject('namespace'),
      port: 0,
      access: { mode: 'header', header: 'X-Forwarded-User' },
    })
    try {
      const anonymous = await call(`${proxied.url}/`)
      expect(anonymous.status).toBe(401)
      expect(anonymous.body).toContain(
        'no X-Forwarded-User header: reach this inbox through its authenticating proxy',
      )
      const bob = await call(`${proxied.url}/`, { headers: { 'x-forwarded-user': 'bob' } })
      expect(bob.status).toBe(200)
      expect(bob.body).toContain('Signed in as <strong>bob</strong>')
      const asAlice = await call(`${proxied.url}/api/approvals/a-none/answer`, {
        method: 'POST',
        headers: { 'x-forwarded-user': 'bob', 'content-type': 'application/json' },
        body: answer('alice'),
      })
      expect(JSON.parse(asAlice.body)).toMatchObject({ ok: false, type: 'NotYou' })
    } finally {
      await proxied.close()
    }
  })

  it('with tokens: a login link sets a private cookie; without it, nothing is shown', async () => {
    const file = join(keys, 'inbox-tokens')
    const token = addToken(file, 'alice')
    const guarded = await startInbox({
      audit: harness.audit,
      client: harness.client,
      namespace: inject('namespace'),
      port: 0,
      access: { mode: 'tokens', names: readTokens(file) },
    })
    try {
      expect((await call(`${guarded.url}/runs`)).status).toBe(401)
      expect((await call(`${guarded.url}/login?token=not-a-token-at-all`)).status).toBe(401)
      const login = await call(`${guarded.url}/login?token=${token}`)
      expect(login.status).toBe(303)
      const cookie = String(login.headers['set-cookie'])
      expect(cookie).toMatch(/^tether_token=[^;]+; HttpOnly; SameSite=Strict; Path=\//)
      const page = await call(`${guarded.url}/runs`, { headers: { cookie: cookie.split(';')[0] as string } })
      expect(page.status).toBe(200)
      expect(page.body).toContain('Signed in as <strong>alice</strong>')
    } finally {
      await guarded.close()
    }
  })
})
