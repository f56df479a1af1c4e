/**
 * The inbox's one script (bundled for the browser by assets.ts). It keeps the approver's Ed25519 key in
 * this browser — imported once from the PEM file, stored in IndexedDB as a non-extractable CryptoKey — and
 * signs answers with WebCrypto, so the server never holds a key and cannot forge an approval. What it
 * signs comes from the same code as `tether approve` (identity/answer.ts): the statement over the action's
 * digest, recomputed here from the action the page shows, refused when it differs from the recorded one.
 * The name it signs as is the one the policies give the key (the run's approver list, or the inbox's
 * lookup for the list page), never typed. It also keeps live regions up to date (server-sent events) and
 * writes every time in the viewer's zone (UTC on hover).
 */
import {
  type AnswerDraft,
  AnswerError,
  formatPublicKey,
  fromBase64,
  keyFingerprint,
  parsePublicKey,
  prepareAnswer,
  type ShownApproval,
  statementBytes,
  toBase64,
} from '../../identity/index.js'
import { formatDeadline, localText, utcText, visible } from '../../present/index.js'

interface StoredKey {
  /** The approver name the policies give this key; undefined while the key is on no list. */
  name?: string | undefined
  publicKey: string
  key: CryptoKey
}

const ED25519 = { name: 'Ed25519' }
const YEAR = 365 * 24 * 3600

/** The viewer's zone and key name, for pages the server renders: preferences, not secrets. */
function setCookie(name: string, value: string, maxAge = YEAR): void {
  // biome-ignore lint/suspicious/noDocumentCookie: two plain values; the Cookie Store API is not in every browser
  document.cookie = `${name}=${encodeURIComponent(value)}; Path=/; Max-Age=${maxAge}; SameSite=Strict`
}

// ---- the key, kept in IndexedDB -------------------------------------------------------------------------

function keyStore(mode: IDBTransactionMode): Promise<IDBObjectStore> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open('tether-inbox', 1)
    open.onupgradeneeded = () => open.result.createObjectStore('keys')
    open.onerror = () => reject(open.error)
    open.onsuccess = () => resolve(open.result.transaction('keys', mode).objectStore('keys'))
  })
}

function request<T>(make: (store: IDBObjectStore) => IDBRequest<T>, mode: IDBTransactionMode): Promise<T> {
  return keyStore(mode).then(
    (store) =>
      new Promise<T>((resolve, reject) => {
        const req = make(store)
        req.onsuccess = () => resolve(req.result)
        req.onerror = () => reject(req.error)
      }),
  )
}

const loadKey = () => request<StoredKey | undefined>((s) => s.get('approver'), 'readonly')
const saveKey = (key: StoredKey) => request((s) => s.put(key, 'approver'), 'readwrite')
const forgetKey = () => request((s) => s.delete('approver'), 'readwrite')

/** The DER bytes of an unencrypted PKCS#8 PEM (what `tether keys new` writes). */
function pemBytes(text: string): Uint8Array {
  if (/BEGIN ENCRYPTED PRIVATE KEY/.test(text)) {
    throw new Error('this key file is encrypted; use the unencrypted file that tether keys new wrote')
  }
  const body = /-----BEGIN PRIVATE KEY-----([\s\S]*?)-----END PRIVATE KEY-----/.exec(text)?.[1]
  const bytes = body ? fromBase64(body.replace(/\s+/g, '')) : undefined
  if (!bytes) throw new Error('this is not a PEM private key file (-----BEGIN PRIVATE KEY-----)')
  return bytes
}

/**
 * Imports the key: once as extractable, only to learn its public half (the JWK's `x`), then for keeps as a
 * non-extractable key that can sign and never be read back.
 */
async function importKey(pem: string): Promise<StoredKey> {
  const der = pemBytes(pem) as Uint8Array<ArrayBuffer>
  let probe: CryptoKey
  try {
    probe = await crypto.subtle.importKey('pkcs8', der, ED25519, true, ['sign'])
  } catch {
    throw new Error('this file does not hold an Ed25519 private key')
  }
  const x = (await crypto.subtle.exportKey('jwk', probe)).x
  const raw = x ? fromBase64(x) : undefined
  if (raw?.length !== 32) throw new Error('could not read the public half of this key')
  const key = await crypto.subtle.importKey('pkcs8', der, ED25519, false, ['sign'])
  const publicKey = formatPublicKey(raw)
  const stored = { name: await approverName(publicKey), publicKey, key }
  await saveKey(stored)
  return stored
}

/**
 * The name the key signs as: the one this page's run gives it (an approval page carries the run's
 * approvers), else the one the recorded policies give it (the inbox looks it up); undefined when it is on
 * no list.
 */
async function approverName(publicKey: string): Promise<string | undefined> {
  const onPage = approvalData()?.approvers.find((a) => a.keys.includes(publicKey))
  if (onPage) return onPage.name
  try {
    const response = await fetch(`/api/approvers?key=${encodeURIComponent(publicKey)}`, {
      credentials: 'same-origin',
    })
    const reply = (await response.json()) as { names?: string[] }
    return reply.names?.length === 1 ? reply.names[0] : reply.names?.[0]
  } catch {
    return undefined
  }
}

function fingerprint(publicKey: string): string {
  const parsed = parsePublicKey(publicKey)
  return parsed.ok ? keyFingerprint(parsed.key) : 'an unreadable key'
}

// ---- the key panel ----------------------------------------------------------------------------------------

let current: StoredKey | undefined

function showKey(): void {
  const status = document.getElementById('key-status')
  const form = document.getElementById('key-import') as HTMLFormElement | null
  const forget = document.getElementById('key-forget')
  const summary = document.getElementById('key-summary')
  const title = document.getElementById('key-title')
  const print = current ? fingerprint(current.publicKey) : ''
  const text = !current
    ? 'No signing key in this browser: import the private key file that tether keys new NAME made for you.'
    : current.name
      ? `Signing as ${current.name} with key ${print}.`
      : `This key (${print}) is on no run's approver list yet: ask the operator to add the entry that tether keys show NAME prints to the floor's approvers.`
  if (status) status.textContent = text
  if (title) title.textContent = current?.name ? `Your signing key: ${current.name}` : 'Your signing key'
  if (summary) summary.textContent = current?.name ? `Signing as ${current.name}` : 'No signing key yet'
  if (form) form.hidden = current !== undefined
  if (forget) forget.hidden = current === undefined
  const signingAs = document.getElementById('signing-as')
  if (signingAs) {
    signingAs.textContent = current?.name
      ? `Your answer is signed in this browser as ${current.name}.`
      : 'Your answer is signed in this browser: import your key below first.'
  }
}

function setUpKeyPanel(): void {
  const form = document.getElementById('key-import') as HTMLFormElement | null
  const file = document.getElementById('key-file') as HTMLInputElement | null
  const status = document.getElementById('key-status')
  form?.addEventListener('submit', (event) => {
    event.preventDefault()
    const chosen = file?.files?.[0]
    if (!chosen) {
      if (status) status.textContent = 'Choose your key file first.'
      return
    }
    chosen
      .text()
      .then((pem) => importKey(pem))
      .then((stored) => {
        current = stored
        if (stored.name) setCookie('tether_viewer', stored.name)
        if (file) file.value = ''
        // A key that signs as someone folds away; one on no list stays open, saying so.
        const panel = document.getElementById('key-panel') as HTMLDetailsElement | null
        if (panel && stored.name) panel.open = false
        // Whatever the answer form said about a missing key no longer holds.
        const result = document.getElementById('answer-result')
        if (result?.className === 'error') {
          result.textContent = ''
          result.className = ''
        }
        showKey()
      })
      .catch((error: unknown) => {
        if (status) status.textContent = `The key was not imported: ${(error as Error).message}.`
      })
  })
  document.getElementById('key-forget')?.addEventListener('click', () => {
    forgetKey()
      .then(() => {
        current = undefined
        setCookie('tether_viewer', '', 0)
        showKey()
      })
      .catch((error: unknown) => {
        if (status) status.textContent = `The key could not be forgotten: ${(error as Error).message}.`
      })
  })
}

// ---- answering ------------------------------------------------------------------------------------------

interface PageApproval extends ShownApproval {
  approvers: Array<{ name: string; keys: string[] }>
  user: string | null
}

function approvalData(): PageApproval | undefined {
  const element = document.getElementById('approval-data')
  return element?.textContent ? (JSON.parse(element.textContent) as PageApproval) : undefined
}

/** The edited command from its textarea: one argument per line (trailing empty lines dropped). */
function replacementArgv(text: string): string[] {
  const lines = text.split('\n').map((line) => line.replace(/\r$/, ''))
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
  return lines
}

/** Refuses to sign unless the page shows exactly the action the statement covers. */
function checkShown(approval: PageApproval): void {
  const facts = document.querySelector('section[aria-labelledby="what-title"]')
  const shown = (selector: string) => facts?.querySelector(selector)?.textContent ?? undefined
  const tree = typeof approval.tree === 'string' ? approval.tree : undefined
  if (
    shown('.target') !== visible(approval.target, { lines: true }) ||
    (tree !== undefined && shown('.tree') !== visible(tree, { lines: true }))
  ) {
    throw new AnswerError(
      'this page does not show the action the approval is about; reload it before answering',
    )
  }
}

function setUpAnswerForm(): void {
  const form = document.getElementById('answer') as HTMLFormElement | null
  const approval = approvalData()
  if (!form || !approval) return
  const result = document.getElementById('answer-result') as HTMLElement
  const replacement = document.getElementById('replacement') as HTMLTextAreaElement | null
  const preview = document.getElementById('replacement-preview')

  const report = (text: string, tone: 'error' | 'done' | '') => {
    result.textContent = text
    result.className = tone
  }
  const sync = () => {
    if (preview && replacement) {
      preview.textContent = `Will run: ${JSON.stringify(replacementArgv(replacement.value))}`
    }
  }
  replacement?.addEventListener('input', sync)
  sync()

  // Each answer is its own button; which one was pressed is the answer.
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const choice = (event.submitter as HTMLButtonElement | null)?.value
    if (choice !== 'approve' && choice !== 'deny' && choice !== 'edit') return
    report('Sending…', '')
    answer(form, approval, choice)
      .then((reply) => {
        report(reply.message, reply.ok ? 'done' : 'error')
        if (reply.ok) for (const element of form.elements) (element as HTMLInputElement).disabled = true
      })
      .catch((error: unknown) => report((error as Error).message, 'error'))
  })
}

async function answer(
  form: HTMLFormElement,
  approval: PageApproval,
  choice: string,
): Promise<{ ok: boolean; message: string }> {
  const fields = new FormData(form)
  const reason = String(fields.get('reason') ?? '').trim()
  const remember = String(fields.get('remember') ?? '')
  if (choice === 'deny' && !reason) {
    ;(document.getElementById('reason') as HTMLElement).focus()
    throw new AnswerError('Write guidance for the model: it reads it instead of the command’s result.')
  }
  const replacement = choice === 'edit' ? replacementArgv(String(fields.get('replacement') ?? '')) : undefined
  if (replacement && replacement.length === 0)
    throw new AnswerError('Write the edited command, one argument per line.')
  if (replacement && remember) {
    throw new AnswerError(
      'Remember applies to the command as asked; approve the edited command without remembering.',
    )
  }
  const signed = approval.identity === 'signed'
  let approver = String(fields.get('approver') ?? '').trim()
  if (signed) {
    if (!current) throw new AnswerError('This run needs your signature: import your key first.')
    if (!crypto.subtle) {
      throw new AnswerError(
        'This page is not a secure context (HTTPS or localhost), so the browser cannot sign.',
      )
    }
    const key = current
    const owner = approval.approvers.find((a) => a.keys.includes(key.publicKey))
    if (!owner) {
      throw new AnswerError(
        `Your key (${fingerprint(key.publicKey)}) is not on this run’s approver list (${approval.approvers.map((a) => a.name).join(', ') || 'none'}); the run would refuse it.`,
      )
    }
    approver = owner.name
  }
  if (!approver) throw new AnswerError('Say who you are: your name as the policy lists approvers.')
  checkShown(approval)
  const draft: AnswerDraft = {
    decision: choice === 'deny' ? ('deny' as const) : ('approve' as const),
    approver,
    reason: reason || undefined,
    remember: choice === 'approve' && (remember === 'exact' || remember === 'wider') ? remember : undefined,
    replacement,
    raiseTo: String(fields.get('raise-to') ?? '').trim() || undefined,
  }
  const { decision, statement } = prepareAnswer(approval, draft, Date.now())
  let body: object = decision
  if (statement && current) {
    const signature = await crypto.subtle.sign(
      ED25519,
      current.key,
      statementBytes(statement) as Uint8Array<ArrayBuffer>,
    )
    body = {
      ...decision,
      signature: {
        key: current.publicKey,
        value: toBase64(new Uint8Array(signature)),
        issuedAt: statement.issuedAt,
      },
    }
  }
  const response = await fetch(`/api/approvals/${encodeURIComponent(approval.approvalId)}/answer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    credentials: 'same-origin',
  })
  const reply = (await response.json().catch(() => undefined)) as
    | { ok?: boolean; message?: string }
    | undefined
  return {
    ok: reply?.ok === true,
    message: reply?.message ?? `The inbox answered HTTP ${response.status}.`,
  }
}

// ---- times and live regions -----------------------------------------------------------------------------

const zone = Intl.DateTimeFormat().resolvedOptions().timeZone

/** Every time on the page in the viewer's zone (UTC on hover); deadlines with the time left. */
function localiseTimes(root: ParentNode): void {
  const now = new Date()
  for (const element of root.querySelectorAll<HTMLTimeElement>('time[data-deadline]')) {
    element.textContent = formatDeadline(new Date(element.dateTime), now, zone)
  }
  for (const element of root.querySelectorAll<HTMLTimeElement>('time[data-local]')) {
    const at = new Date(element.dateTime)
    element.textContent = localText(at, zone)
    element.title = utcText(at)
  }
}

/**
 * The page's live regions, from its one event stream. The stream is open only while the page is visible:
 * a browser allows few connections per server, and hidden tabs should not hold them.
 */
function setUpLiveRegions(): void {
  const url = document.querySelector<HTMLElement>('main[data-live]')?.dataset.live
  if (!url) return
  let source: EventSource | undefined
  const connect = () => {
    const versions = [...document.querySelectorAll<HTMLElement>('[data-live-region]')]
      .map((region) => `${region.id}:${region.dataset.version ?? ''}`)
      .join(',')
    source = new EventSource(`${url}${url.includes('?') ? '&' : '?'}v=${encodeURIComponent(versions)}`)
    source.addEventListener('update', (event) => {
      const update = JSON.parse((event as MessageEvent<string>).data) as {
        id: string
        version: string
        html: string
      }
      const region = document.getElementById(update.id)
      if (!region) return
      region.dataset.version = update.version
      replaceRegion(region, update.html)
    })
  }
  const disconnect = () => {
    source?.close()
    source = undefined
  }
  document.addEventListener('visibilitychange', () =>
    document.hidden ? disconnect() : (source ?? connect()),
  )
  // Closed before the page goes, so leaving a page is not reported as a failed connection.
  addEventListener('pagehide', disconnect)
  if (!document.hidden) connect()
}

/** New content for a live region, keeping open what the reader opened. */
function replaceRegion(region: HTMLElement, html: string): void {
  const open = new Set(
    [...region.querySelectorAll<HTMLDetailsElement>('details[data-key]')]
      .filter((details) => details.open)
      .map((details) => details.dataset.key),
  )
  region.innerHTML = html
  for (const details of region.querySelectorAll<HTMLDetailsElement>('details[data-key]')) {
    if (open.has(details.dataset.key)) details.open = true
  }
  localiseTimes(region)
}

function start(): void {
  setCookie('tether_tz', zone)
  localiseTimes(document)
  setInterval(() => localiseTimes(document), 30_000)
  setUpKeyPanel()
  setUpAnswerForm()
  setUpLiveRegions()
  loadKey()
    .then(async (stored) => {
      // A key that was on no list when imported may be on one now.
      if (stored && !stored.name) {
        stored.name = await approverName(stored.publicKey)
        if (stored.name) await saveKey(stored)
      }
      current = stored
      if (stored?.name) setCookie('tether_viewer', stored.name)
      showKey()
      // Unfolded where it is needed now: an answer that must be signed, and no key to sign it with.
      const panel = document.getElementById('key-panel') as HTMLDetailsElement | null
      if (panel && !stored && approvalData()?.identity === 'signed') panel.open = true
    })
    .catch(() => {
      current = undefined
      showKey()
    })
}

start()
