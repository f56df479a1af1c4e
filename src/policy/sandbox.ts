/**
 * The sandbox settings a policy carries: whether commands run inside the OS sandbox, and what it lets
 * them reach. Set per layer, with one rule that keeps an operator's boundary from being undone: only the
 * operator may turn the sandbox off or widen it (read-write caches, extra visible or writable host paths);
 * any other layer can only keep it on, hide more, lower limits and tighten caches. On a run's effective
 * policy the operator is the worker's floor (its layers); in a policy on its own, its first layer. Layers
 * a preset brings (`builtin-*`) carry no sandbox settings and never count as the operator's.
 */
import { z } from 'zod'
import { PolicyError } from './errors.js'

export const SANDBOX_MODES = ['enforce', 'off'] as const
export const CACHE_ACCESS = ['read-write', 'read-only', 'none'] as const
export type SandboxMode = (typeof SANDBOX_MODES)[number]
export type CacheAccess = (typeof CACHE_ACCESS)[number]

const SIZE_UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
}
const TIME_UNITS: Record<string, number> = { s: 1, m: 60, h: 3_600 }

/** `"4GiB"` → bytes; undefined when not a size with a unit. */
export function parseSize(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)\s*$/i.exec(text)
  if (!match) return undefined
  const bytes = Math.floor(Number(match[1]) * (SIZE_UNITS[(match[2] as string).toLowerCase()] as number))
  return bytes >= 1 && Number.isSafeInteger(bytes) ? bytes : undefined
}

function parseSeconds(text: string): number | undefined {
  const match = /^\s*(\d+)\s*(s|m|h)\s*$/.exec(text)
  if (!match) return undefined
  const seconds = Number(match[1]) * (TIME_UNITS[match[2] as string] as number)
  return seconds >= 1 && seconds <= 365 * 86_400 ? seconds : undefined
}

const size = z.string().refine((text) => parseSize(text) !== undefined, {
  message: 'expected a size with a unit, e.g. "512MiB", "4GiB" or "10GB"',
})
const cpuTime = z.string().refine((text) => parseSeconds(text) !== undefined, {
  message: 'expected whole seconds, minutes or hours with a unit, e.g. "90s", "10m" or "1h"',
})
const hostPath = z
  .string()
  .refine((path) => path.startsWith('/') && !path.includes('\0'), 'expected an absolute host path')
  .refine((path) => path.split('/').every((part) => part !== '..'), 'a sandbox path may not contain ".."')

/** `enforce` / `off` is short for `{ mode: … }`. */
export const sandboxSettingsSchema = z.preprocess(
  (value) => (typeof value === 'string' ? { mode: value } : value),
  z
    .object({
      mode: z.enum(SANDBOX_MODES).optional(),
      /** Toolchain caches (npm, Go, cargo, pip, Maven, Gradle, yarn, pnpm). */
      caches: z.enum(CACHE_ACCESS).optional(),
      limits: z
        .object({
          processes: z.number().int().min(8).max(1_000_000),
          memory: size,
          fileSize: size,
          cpuTime,
        })
        .partial()
        .strict()
        .optional(),
      /** Host paths that stay visible read-only although the private home (or /tmp) would hide them. */
      readOnly: z.array(hostPath).optional(),
      /** Host paths commands may write besides the workspace. */
      writable: z.array(hostPath).optional(),
      /** Host paths replaced by an empty folder or file. */
      hide: z.array(hostPath).optional(),
    })
    .strict(),
)

/** As written: `enforce`, `off`, or detailed settings. */
export type SandboxSettings = z.input<typeof sandboxSettingsSchema>
/** Validated: always the detailed form. */
export type ParsedSandboxSettings = z.output<typeof sandboxSettingsSchema>

/** The sandbox a policy asks for, all layers taken together. */
export interface SandboxPolicy {
  mode: SandboxMode
  /** The layer that decided the mode; undefined when nobody set it (the default, `enforce`). */
  modeSetBy?: string
  caches: CacheAccess
  limits: { processes?: number; memoryBytes?: number; fileSizeBytes?: number; cpuSeconds?: number }
  readOnly: string[]
  writable: string[]
  hide: string[]
}

const CACHE_RANK: Record<CacheAccess, number> = { 'read-write': 0, 'read-only': 1, none: 2 }

/**
 * Combines the sandbox settings of a policy's layers (in stack order; settings already validated). Throws
 * PolicyError, naming the layer and the field (`fieldOf(name)` is where that layer's settings were
 * written), when a layer that is not the operator's tries to loosen the sandbox.
 */
export function combineSandbox(
  layers: ReadonlyArray<{
    name: string
    origin?: string | undefined
    sandbox?: ParsedSandboxSettings | undefined
  }>,
  fieldOf: (name: string, index: number) => string = (_, index) => `layers[${index}]`,
  file?: string,
): SandboxPolicy {
  const onFloor = layers.some((layer) => layer.origin === 'floor')
  const combined: SandboxPolicy = {
    mode: 'enforce',
    caches: 'read-write',
    limits: {},
    readOnly: [],
    writable: [],
    hide: [],
  }
  let first = true
  for (const [index, layer] of layers.entries()) {
    if (layer.name.startsWith('builtin-')) continue
    const isFirst = onFloor ? layer.origin === 'floor' : first
    first = false
    if (layer.sandbox === undefined) continue
    const settings = layer.sandbox
    const refuse = (field: string, what: string) => {
      const path = `${fieldOf(layer.name, index)}.sandbox.${field}`
      if (onFloor) {
        throw new PolicyError(
          `layer "${layer.name}" ${what} (sandbox.${field}); only the worker's floor may loosen the sandbox, a run's policy can only tighten it`,
          path,
        )
      }
      throw new PolicyError(
        `${file ? `${file}: ` : ''}${path}: layer "${layer.name}" ${what}; only the first layer (the operator's) may loosen the sandbox, later layers can only tighten it`,
        path,
        file,
      )
    }
    if (settings.mode === 'off') {
      if (!isFirst) refuse('mode', 'turns the sandbox off')
      combined.mode = 'off'
      combined.modeSetBy = layer.name
    } else if (settings.mode === 'enforce') {
      combined.mode = 'enforce'
      combined.modeSetBy = layer.name
    }
    if (settings.caches) {
      if (!isFirst && CACHE_RANK[settings.caches] < CACHE_RANK[combined.caches]) {
        refuse('caches', `gives caches ${settings.caches} access`)
      }
      combined.caches = settings.caches
    }
    if (!isFirst && settings.readOnly?.length) refuse('readOnly', 'exposes host paths')
    if (!isFirst && settings.writable?.length) refuse('writable', 'makes host paths writable')
    combined.readOnly.push(...(settings.readOnly ?? []))
    combined.writable.push(...(settings.writable ?? []))
    combined.hide.push(...(settings.hide ?? []))
    const limits = settings.limits ?? {}
    const lower = (key: keyof SandboxPolicy['limits'], value: number | undefined) => {
      if (value === undefined) return
      const current = combined.limits[key]
      combined.limits[key] = current === undefined ? value : Math.min(current, value)
    }
    lower('processes', limits.processes)
    lower('memoryBytes', limits.memory === undefined ? undefined : parseSize(limits.memory))
    lower('fileSizeBytes', limits.fileSize === undefined ? undefined : parseSize(limits.fileSize))
    lower('cpuSeconds', limits.cpuTime === undefined ? undefined : parseSeconds(limits.cpuTime))
  }
  return combined
}
