/**
 * A verified tree as a git branch: when the workspace is a git repository, the tree the gate passed on
 * becomes a commit on `tether/<run id>`, parented on the repository's HEAD, written by the worker straight
 * into `.git` from the snapshot store (so it holds exactly what was snapshotted: no cache, no file the policy
 * hides). Nothing is pushed.
 *
 * The objects are written here, without running git: a repository the run's commands could edit may carry
 * configuration (filters, fsmonitor, hooks) that git would run as the worker. For the same reason every
 * folder written through is checked not to be a symlink, and files are created without following one.
 * Empty folders have no place in git and are left out, as is anything named `.git` below the root.
 */
import { createHash } from 'node:crypto'
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { deflateSync } from 'node:zlib'
import { readFolders } from './restore.js'
import type { ObjectStore } from './store.js'
import { decodeChunks, type TreeEntry } from './tree.js'

export interface BranchCommit {
  branch: string
  commit: string
  parent?: string | undefined
}

export interface BranchRequest {
  runId: string
  /** The root hash of the verified tree. */
  root: string
  goal: string
  outcome: string
  approvers: readonly string[]
  at: Date
}

/** Why no branch was written, as one line; or the branch and commit that were. */
export type BranchResult = { written: BranchCommit } | { skipped: string }

/**
 * Writes `request.root` as a commit on `tether/<run id>` in the repository at `workspace/.git`. A
 * workspace that is not a git repository (or whose `.git` is not a plain folder) is skipped, saying why.
 */
export async function commitToBranch(
  store: ObjectStore,
  workspace: string,
  request: BranchRequest,
): Promise<BranchResult> {
  const git = `${workspace}/.git`
  if (!isRealFolder(git)) return { skipped: 'the workspace is not a git repository with a .git folder' }
  const branch = `tether/${request.runId}`
  if (!validRefName(branch)) return { skipped: `${branch} is not a name git allows for a branch` }
  const repo = new LooseObjects(git, objectFormat(git))
  const tree = await repo.treeOf(store, request.root)
  const parent = resolveHead(git)
  const when = `${Math.floor(request.at.getTime() / 1000)} +0000`
  const identity = `tether <tether@localhost> ${when}`
  const commit = repo.write(
    'commit',
    Buffer.from(
      `tree ${tree ?? repo.write('tree', Buffer.alloc(0))}\n` +
        (parent ? `parent ${parent}\n` : '') +
        `author ${identity}\ncommitter ${identity}\n\n${commitMessage(request)}`,
      'utf8',
    ),
  )
  writeRef(git, `refs/heads/${branch}`, commit)
  return { written: { branch, commit, parent } }
}

/** Subject: the goal's first line; body: the goal, the outcome; trailers: the run, its tree, its approvers. */
export function commitMessage(request: BranchRequest): string {
  const goal = request.goal.trim()
  const firstLine = goal.split('\n')[0] ?? ''
  const subject = firstLine.length > 72 ? `${firstLine.slice(0, 71)}…` : firstLine
  const body = goal === subject ? '' : `${goal}\n\n`
  const trailers = [
    `Tether-Run: ${request.runId}`,
    `Tether-Tree: ${request.root}`,
    ...request.approvers.map((who) => `Approved-by: ${who.replace(/\s+/g, ' ')}`),
  ]
  return `${subject}\n\n${body}Outcome: ${request.outcome}\n\n${trailers.join('\n')}\n`
}

class LooseObjects {
  /** Git ids by tether hash: the same content or folder is converted once. */
  private readonly converted = new Map<string, string | undefined>()

  constructor(
    private readonly git: string,
    private readonly algorithm: 'sha1' | 'sha256',
  ) {}

  /** The git tree of a tether folder; undefined when it holds nothing git keeps (no files, links). */
  async treeOf(store: ObjectStore, hash: string): Promise<string | undefined> {
    if (this.converted.has(hash)) return this.converted.get(hash)
    const entries = (await readFolders(store, [hash])).get(hash) as TreeEntry[]
    const files = entries.filter((e) => e.kind === 'f' && !this.converted.has(e.hash)).map((e) => e.hash)
    const contents = files.length > 0 ? await store.get([...new Set(files)]) : new Map<string, Buffer>()
    const rows: Array<{ mode: string; name: Buffer; id: string }> = []
    for (const entry of entries) {
      // git refuses a tree that names `.git`; at the root it is the repository itself.
      if (entry.name.toLowerCase() === '.git') continue
      let id: string | undefined
      let mode: string
      if (entry.kind === 'd') {
        id = await this.treeOf(store, entry.hash)
        mode = '40000'
      } else {
        mode = entry.kind === 'l' ? '120000' : entry.mode & 0o100 ? '100755' : '100644'
        id = this.converted.get(entry.hash)
        if (id === undefined) {
          id =
            entry.kind === 'F'
              ? await this.chunkedBlob(store, entry.hash, entry.size)
              : this.write('blob', contents.get(entry.hash) as Buffer)
          this.converted.set(entry.hash, id)
        }
      }
      if (id !== undefined) rows.push({ mode, name: Buffer.from(entry.name, 'latin1'), id })
    }
    // git orders a tree's entries by name, a folder's name compared as if it ended in `/`.
    const key = (row: (typeof rows)[number]) =>
      row.mode === '40000' ? Buffer.concat([row.name, Buffer.from('/')]) : row.name
    rows.sort((a, b) => Buffer.compare(key(a), key(b)))
    const id =
      rows.length === 0
        ? undefined
        : this.write(
            'tree',
            Buffer.concat(
              rows.flatMap((row) => [
                Buffer.from(`${row.mode} `),
                row.name,
                Buffer.from([0]),
                Buffer.from(row.id, 'hex'),
              ]),
            ),
          )
    this.converted.set(hash, id)
    return id
  }

  /** A file stored as chunks, joined; its chunks are fetched one at a time, so memory holds one. */
  private async chunkedBlob(store: ObjectStore, hash: string, size: number): Promise<string> {
    const chunks = decodeChunks((await store.get([hash])).get(hash) as Buffer)
    const parts: Buffer[] = []
    for (const chunk of chunks) parts.push((await store.get([chunk])).get(chunk) as Buffer)
    const content = Buffer.concat(parts, size)
    return this.write('blob', content)
  }

  /** Writes a loose object unless it is there; returns its id. */
  write(type: 'blob' | 'tree' | 'commit', content: Buffer): string {
    const framed = Buffer.concat([Buffer.from(`${type} ${content.length}\0`), content])
    const id = createHash(this.algorithm).update(framed).digest('hex')
    const folder = `${this.git}/objects/${id.slice(0, 2)}`
    const path = `${folder}/${id.slice(2)}`
    if (exists(path)) return id
    ensureFolder(this.git, `objects/${id.slice(0, 2)}`)
    writeAtomically(path, deflateSync(framed))
    return id
  }
}

/** The repository's HEAD commit, if it resolves (a loose or packed ref, or a detached id). */
function resolveHead(git: string): string | undefined {
  const head = readPlain(`${git}/HEAD`)?.trim()
  if (!head) return undefined
  if (/^[0-9a-f]{40,64}$/.test(head)) return head
  const ref = /^ref: (refs\/[^\s]+)$/.exec(head)?.[1]
  if (!ref || !validRefName(ref.slice('refs/'.length))) return undefined
  const loose = readPlain(`${git}/${ref}`)?.trim()
  if (loose && /^[0-9a-f]{40,64}$/.test(loose)) return loose
  for (const line of (readPlain(`${git}/packed-refs`) ?? '').split('\n')) {
    const [id, name] = line.split(' ')
    if (name === ref && id && /^[0-9a-f]{40,64}$/.test(id)) return id
  }
  return undefined
}

function objectFormat(git: string): 'sha1' | 'sha256' {
  return /^\s*objectformat\s*=\s*sha256\s*$/im.test(readPlain(`${git}/config`) ?? '') ? 'sha256' : 'sha1'
}

function writeRef(git: string, ref: string, id: string): void {
  const slash = ref.lastIndexOf('/')
  ensureFolder(git, ref.slice(0, slash))
  writeAtomically(`${git}/${ref}`, Buffer.from(`${id}\n`))
}

/** git's rules for a ref name, for the parts tether writes: no `..`, no control or special characters. */
function validRefName(name: string): boolean {
  return (
    !/[\x00-\x20\x7f~^:?*[\\]|\.\.|@\{|\/\/|\/\.|^\.|\.lock(\/|$)|[./]$/.test(name) &&
    name.split('/').every((part) => part !== '' && !part.startsWith('.'))
  )
}

/** Creates each folder of `rel` under `git`, refusing any that is a symlink or not a folder. */
function ensureFolder(git: string, rel: string): void {
  let path = git
  for (const part of rel.split('/')) {
    path = `${path}/${part}`
    if (!exists(path)) mkdirSync(path, { mode: 0o755 })
    if (!isRealFolder(path)) throw new Error(`${path} is not a folder (a symlink?); no branch written`)
  }
}

/** Writes `data` to a new file beside `path` (never following a link), then renames it into place. */
function writeAtomically(path: string, data: Buffer): void {
  const temporary = `${path}.tether-${process.pid}-${Date.now()}.lock`
  const fd = openSync(
    temporary,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o444,
  )
  try {
    writeSync(fd, data)
  } finally {
    closeSync(fd)
  }
  try {
    renameSync(temporary, path)
  } catch (error) {
    unlinkSync(temporary)
    throw error
  }
}

function isRealFolder(path: string): boolean {
  try {
    return lstatSync(path).isDirectory()
  } catch {
    return false
  }
}

function exists(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}

/** A regular file's text (never through a symlink); undefined when it is not one. */
function readPlain(path: string): string | undefined {
  try {
    return lstatSync(path).isFile() ? readFileSync(path, 'utf8') : undefined
  } catch {
    return undefined
  }
}
