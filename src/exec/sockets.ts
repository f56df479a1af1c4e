/**
 * Where tether's Unix sockets live (the launcher's, each sandboxed command's egress proxy): one private
 * folder per process in the host's /tmp — never under TMPDIR, which may point anywhere the sandbox shows
 * read-only (CI runners put it outside /tmp), whereas every sandbox gets an empty /tmp of its own. /tmp
 * also keeps socket paths far below the 108-byte limit. Folders are made with mode 0700 (mkdtemp).
 *
 * Nothing is left behind: the folder goes when its process exits; its launcher removes it should the
 * process be killed; and a process making its folder removes those of processes that ended before their
 * launcher could (killed in the moment between the two, or together with it).
 */
import { existsSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { processExists } from './process-tree.js'

const TMP = '/tmp'
/** `tether-<pid>-XXXXXX`: whose folder it is. */
const FOLDER = /^tether-(\d+)-[A-Za-z0-9]{6}$/

let root: string | undefined

/** This process's socket folder, made on first use (and again should something have removed it). */
export function socketRoot(): string {
  if (root === undefined || !existsSync(root)) {
    let made: string
    try {
      made = mkdtempSync(join(TMP, `tether-${process.pid}-`))
    } catch (error) {
      const { code, message } = error as NodeJS.ErrnoException
      throw new Error(
        `tether keeps its sockets in ${TMP}, where this worker cannot make a folder: ${code ?? message}`,
      )
    }
    if (root === undefined) {
      process.once('exit', () => root && rmSync(root, { recursive: true, force: true }))
      void sweep()
    }
    root = made
  }
  return root
}

/** A new private folder for one server's socket, inside this process's socket folder. */
export function socketFolder(prefix: string): string {
  return mkdtempSync(join(socketRoot(), prefix))
}

/** Whether any socket in the folder's subfolders accepts a connection (its owner lives, in another PID namespace perhaps). */
async function listening(folder: string): Promise<boolean> {
  const sockets: string[] = []
  for (const sub of readdirSync(folder, { withFileTypes: true })) {
    if (!sub.isDirectory()) continue
    for (const entry of readdirSync(join(folder, sub.name), { withFileTypes: true })) {
      if (entry.isSocket()) sockets.push(join(folder, sub.name, entry.name))
    }
  }
  const answers = await Promise.all(
    sockets.map(
      (path) =>
        new Promise<boolean>((resolve) => {
          const socket = connect(path)
          socket.once('connect', () => {
            socket.destroy()
            resolve(true)
          })
          socket.once('error', () => resolve(false))
        }),
    ),
  )
  return answers.includes(true)
}

/** Removes the socket folders (this user's) of processes that are gone and whose sockets nobody serves. */
async function sweep(): Promise<void> {
  const uid = process.getuid?.()
  let names: string[] = []
  try {
    names = readdirSync(TMP)
  } catch {
    return
  }
  for (const name of names) {
    const owner = FOLDER.exec(name)?.[1]
    if (owner === undefined || Number(owner) === process.pid || processExists(Number(owner))) continue
    const folder = join(TMP, name)
    try {
      const stat = lstatSync(folder, { throwIfNoEntry: false })
      if (!stat?.isDirectory() || stat.uid !== uid || (await listening(folder))) continue
      rmSync(folder, { recursive: true, force: true })
    } catch {
      // Tidying up is best effort: a folder that vanished or cannot be read is left alone.
    }
  }
}
