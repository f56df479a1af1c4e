import { rm } from 'node:fs/promises'
import { closeWarmSandboxes } from '../../src/exec/index.js'

/**
 * Removes a folder that sandboxed commands ran in. A command's end starts building the sandbox for its
 * workspace's next command (exec/sandbox/ahead.ts), which creates git's empty folders and bwrap's mount
 * points in the workspace: racing a removal, one lands in a folder already emptied (ENOTEMPTY). So the
 * sandboxes built ahead go first, as they do when a run ends.
 */
export async function removeSandboxedFolder(path: string): Promise<void> {
  await closeWarmSandboxes()
  await rm(path, { recursive: true, force: true })
}
