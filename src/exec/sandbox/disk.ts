/**
 * The disk bound. A workspace and its caches usually sit on the disk the worker's Temporal server and
 * PostgreSQL write to, and nothing else stops a build from filling it. So every file system a command (or
 * a file tool) writes to keeps a reserve free for the rest of the machine — 5% of it, at most 4 GiB, and 5%
 * of its inodes, at most 64 Ki — checked before every command and every file write, and every quarter
 * second while a sandboxed command runs (one that eats into the reserve is stopped).
 */

import { type StatsFs, statfsSync } from 'node:fs'
import { formatBytes } from '../../present/index.js'

const GiB = 1024 ** 3
const MOST_BYTES = 4 * GiB
const MOST_INODES = 64 * 1024
const SHARE = 0.05

/** What a file system keeps free, by its size. */
export function diskReserve(stats: StatsFs): { bytes: number; inodes: number } {
  return {
    bytes: Math.min(MOST_BYTES, Math.floor(stats.blocks * stats.bsize * SHARE)),
    inodes: Math.min(MOST_INODES, Math.floor(stats.files * SHARE)),
  }
}

/**
 * One line saying which file system would be left with less than its reserve once `adding` more bytes
 * are written under `paths`; undefined when all keep theirs. Paths that do not exist are skipped.
 */
export function diskShortfall(paths: Iterable<string>, adding = 0): string | undefined {
  for (const path of paths) {
    let stats: StatsFs
    try {
      stats = statfsSync(path)
    } catch {
      continue
    }
    const reserve = diskReserve(stats)
    // bavail: what a process that is not root may still use.
    const free = stats.bavail * stats.bsize
    if (free - adding < reserve.bytes) {
      return (
        `the disk under ${path} has ${formatBytes(free)} free${adding ? ` (${formatBytes(adding)} more asked for)` : ''}, ` +
        `and ${formatBytes(reserve.bytes)} of it stays free for the rest of the machine; delete files (build ` +
        'outputs, caches) to make room'
      )
    }
    // File systems that do not count inodes (btrfs) report none at all.
    if (stats.files > 0 && stats.ffree <= reserve.inodes) {
      return (
        `the disk under ${path} has ${stats.ffree} free inodes, and ${reserve.inodes} stay free for the rest ` +
        'of the machine; delete files (many small ones: node_modules, build outputs) to make room'
      )
    }
  }
  return undefined
}
