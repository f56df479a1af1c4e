/**
 * Opening and writing files so that what is touched is what was resolved. A path is resolved (symlinks
 * followed, root checked), then opened without following a final symlink, and the open file is confirmed
 * to be the resolved one: on Linux by asking the kernel where the descriptor points (`/proc/self/fd`), and
 * elsewhere by resolving again and comparing device and inode. Writes and directory creation go through a
 * confirmed directory descriptor, so a directory swapped for a symlink mid-way cannot redirect them.
 */
import { randomBytes } from 'node:crypto'
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, type Stats } from 'node:fs'
import {
  type FileHandle,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  realpath,
  rename,
  unlink,
} from 'node:fs/promises'
import path from 'node:path'
import { errorCode, type ResolvedPath, resolveWorkspacePath, toWorkspaceRelative } from './paths.js'
import { decodeText } from './text.js'

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants

export type Failure = {
  ok: false
  /** `missing`: nothing there; `refused`: path safety said no; `failed`: the file system said no. */
  code: 'missing' | 'refused' | 'failed'
  reason: string
}

function failure(code: Failure['code'], reason: string): Failure {
  return { ok: false, code, reason }
}

const CHANGED =
  'changed while it was being opened (a symlink or directory was swapped); nothing was touched, try again'

/** Where an open descriptor really points, per the kernel; undefined where the platform cannot say. */
async function kernelPath(handle: FileHandle): Promise<string | undefined> {
  try {
    return await readlink(`/proc/self/fd/${handle.fd}`)
  } catch {
    return undefined
  }
}

/** The descriptor's own path for `*at`-style use (`/proc/self/fd/N/name`), when the platform has one. */
function descriptorPath(handle: FileHandle): string {
  return `/proc/self/fd/${handle.fd}`
}

/** Confirms an open descriptor is the file at `expected` (an absolute path inside the workspace). */
async function confirm(
  handle: FileHandle,
  root: string,
  relPath: string,
  expected: string,
): Promise<{ ok: true; viaDescriptor: boolean } | Failure> {
  const actual = await kernelPath(handle)
  if (actual !== undefined) {
    return actual === expected
      ? { ok: true, viaDescriptor: true }
      : failure('refused', `${relPath} ${CHANGED}`)
  }
  const again = resolveWorkspacePath(root, relPath)
  if (!again.ok) return failure('refused', again.reason)
  if (again.absolute !== expected) return failure('refused', `${relPath} ${CHANGED}`)
  const [opened, onDisk] = await Promise.all([handle.stat(), lstat(expected)])
  if (opened.ino !== onDisk.ino || opened.dev !== onDisk.dev) {
    return failure('refused', `${relPath} ${CHANGED}`)
  }
  return { ok: true, viaDescriptor: false }
}

function describeOpenError(error: unknown, relPath: string): Failure {
  const code = errorCode(error)
  if (code === 'ENOENT') return failure('missing', `${relPath} does not exist`)
  if (code === 'ELOOP') return failure('refused', `${relPath} ${CHANGED}`)
  if (code === 'ENOTDIR') return failure('failed', `${relPath} is not a directory`)
  if (code === 'EACCES' || code === 'EPERM') {
    return failure('failed', `${relPath} cannot be opened: permission denied`)
  }
  return failure('failed', `${relPath} cannot be opened (${code ?? String(error)})`)
}

export interface OpenedFile {
  ok: true
  handle: FileHandle
  stats: Stats
  /** A path that reaches the same directory entry without re-walking symlinks (for directories: readdir). */
  reach: string
}

/**
 * Opens `target` (already resolved) read-only without following a final symlink or blocking on a FIFO,
 * and confirms it is the resolved file. The caller closes the handle.
 */
export async function openResolved(
  root: string,
  target: ResolvedPath,
  as: 'file' | 'directory',
): Promise<OpenedFile | Failure> {
  const flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | (as === 'directory' ? O_DIRECTORY : 0)
  let handle: FileHandle
  try {
    handle = await open(target.absolute, flags)
  } catch (error) {
    return describeOpenError(error, target.normalised)
  }
  try {
    const confirmed = await confirm(handle, root, target.normalised, target.absolute)
    if (!confirmed.ok) {
      await handle.close()
      return confirmed
    }
    const stats = await handle.stat()
    return {
      ok: true,
      handle,
      stats,
      reach: confirmed.viaDescriptor ? descriptorPath(handle) : target.absolute,
    }
  } catch (error) {
    await handle.close()
    throw error
  }
}

/** Lists a confirmed directory, reading through its descriptor where the platform allows. */
export async function listOpened(directory: OpenedFile) {
  return readdir(directory.reach, { withFileTypes: true })
}

/** Identity of a file as it was read, so an edit can refuse to overwrite a file changed in between. */
export interface FileIdentity {
  ino: number
  size: number
  mtimeMs: number
}

export type WriteResult = { ok: true; created: boolean } | Failure

/**
 * Writes `bytes` to `target` atomically: a temporary file in the same directory, then a rename over the
 * destination (a rename replaces a final symlink instead of following it). Missing parent directories are
 * created one at a time through confirmed directory descriptors.
 */
export async function writeResolved(
  root: string,
  target: ResolvedPath,
  bytes: Uint8Array,
  options: { expect?: FileIdentity } = {},
): Promise<WriteResult> {
  if (target.resolved === '.')
    return failure('failed', `${target.normalised} is the workspace root, a directory`)
  const parent = path.dirname(target.absolute)
  const name = path.basename(target.absolute)
  const missing: string[] = []
  let existing = parent
  while (true) {
    try {
      await lstat(existing)
      break
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') return describeOpenError(error, target.normalised)
      missing.unshift(path.basename(existing))
      existing = path.dirname(existing)
    }
  }
  const realRoot = await realpath(root)
  let directory = await openDirectory(root, realRoot, existing)
  if (!directory.ok) return directory
  try {
    for (const segment of missing) {
      const child = await makeChildDirectory(root, realRoot, directory, segment)
      await directory.handle.close()
      if (!child.ok) return child
      directory = child
    }
    return await replaceEntry(directory, name, bytes, options, target.normalised)
  } finally {
    await directory.handle.close().catch(() => undefined)
  }
}

interface OpenedDirectory extends OpenedFile {
  absolute: string
}

async function openDirectory(
  root: string,
  realRoot: string,
  absolute: string,
): Promise<OpenedDirectory | Failure> {
  const relative = toWorkspaceRelative(realRoot, absolute)
  const opened = await openResolved(
    root,
    { ok: true, normalised: relative, resolved: relative, absolute },
    'directory',
  )
  return opened.ok ? { ...opened, absolute } : opened
}

async function makeChildDirectory(
  root: string,
  realRoot: string,
  directory: OpenedDirectory,
  segment: string,
): Promise<OpenedDirectory | Failure> {
  try {
    await mkdir(path.join(directory.reach, segment))
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') {
      return describeOpenError(error, toWorkspaceRelative(realRoot, path.join(directory.absolute, segment)))
    }
  }
  // Opened by its full path with O_NOFOLLOW and then confirmed: a symlink planted in its place is refused.
  const child = await openDirectory(root, realRoot, path.join(directory.absolute, segment))
  if (child.ok && (await takeOwner(child.handle, directory.stats))) child.stats = await child.handle.stat()
  return child
}

/**
 * A root worker's commands run as the workspace's own identity (docs/sandbox.md), so what the worker makes
 * there belongs to the owner of the folder it is made in (of the file it replaces) — else commands could not
 * change it. Through the open descriptor, so nothing swapped in meanwhile is touched.
 */
async function takeOwner(handle: FileHandle, owner: Stats): Promise<boolean> {
  if (process.getuid?.() !== 0 || (owner.uid === 0 && owner.gid === 0)) return false
  await handle.chown(owner.uid, owner.gid)
  return true
}

async function replaceEntry(
  directory: OpenedDirectory,
  name: string,
  bytes: Uint8Array,
  options: { expect?: FileIdentity },
  shown: string,
): Promise<WriteResult> {
  const destination = path.join(directory.reach, name)
  const before = await lstat(destination).catch(() => undefined)
  if (before?.isDirectory()) return failure('failed', `${shown} is a directory`)
  if (options.expect && !sameIdentity(before, options.expect)) {
    return failure('refused', `${shown} changed after it was read; read it again and repeat the edit`)
  }
  // Short enough for any file system's name limit, whatever the length of `name`.
  const temporary = path.join(
    directory.reach,
    `.${name.slice(0, 64)}.${randomBytes(6).toString('hex')}.tether-tmp`,
  )
  let handle: FileHandle | undefined
  try {
    handle = await open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666)
    await handle.writeFile(bytes)
    // Owner first: a change of owner clears set-id bits, which the mode below restores.
    await takeOwner(handle, before?.isFile() ? before : directory.stats)
    // A rewrite keeps the file's permissions (an executable script stays executable).
    if (before?.isFile()) await handle.chmod(before.mode & 0o7777)
    await handle.close()
    handle = undefined
    await rename(temporary, destination)
    return { ok: true, created: before === undefined }
  } catch (error) {
    await handle?.close().catch(() => undefined)
    await unlink(temporary).catch(() => undefined)
    const code = errorCode(error)
    if (code === 'ENOSPC') return failure('failed', `${shown} was not written: the disk is full`)
    if (code === 'EROFS') return failure('failed', `${shown} was not written: the file system is read-only`)
    if (code === 'EACCES' || code === 'EPERM') {
      return failure('failed', `${shown} was not written: permission denied`)
    }
    return failure('failed', `${shown} was not written (${code ?? String(error)})`)
  }
}

function sameIdentity(stats: Stats | undefined, expected: FileIdentity): boolean {
  return (
    stats !== undefined &&
    stats.ino === expected.ino &&
    stats.size === expected.size &&
    stats.mtimeMs === expected.mtimeMs
  )
}

/**
 * A small workspace text file (a manifest such as package.json), or undefined when it is absent, leads
 * outside the workspace or is not UTF-8 text. Synchronous: the never-exiting-command check that reads
 * package.json runs inside the synchronous policy check.
 */
export function readWorkspaceText(root: string, relPath: string, maxBytes = 1024 * 1024): string | undefined {
  const target = resolveWorkspacePath(root, relPath)
  if (!target.ok) return undefined
  let fd: number
  try {
    fd = openSync(target.absolute, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    const stats = fstatSync(fd)
    if (!stats.isFile() || stats.size > maxBytes) return undefined
    const decoded = decodeText(readFileSync(fd))
    return decoded.ok ? decoded.text : undefined
  } finally {
    closeSync(fd)
  }
}

/** Whether the workspace root has an entry at `relPath` (marker and lock files; symlinks are not followed). */
export function hasEntry(root: string, relPath: string): boolean {
  try {
    // Most markers asked about are missing: without the option, each one costs an exception.
    return lstatSync(path.join(root, relPath), { throwIfNoEntry: false }) !== undefined
  } catch {
    return false
  }
}
