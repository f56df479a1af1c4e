/**
 * Net targets and net rule patterns as the policy matches them. A target that is an IP address is judged
 * in its canonical spelling (so `[::ffff:a9fe:a9fe]:80`, `[0:0:0:0:0:ffff:169.254.169.254]` and
 * `169.254.169.254` meet the same rules), and a rule pattern that names an address or a CIDR range
 * (`10.0.0.5`, `10.0.0.0/8:443`, `[fd00::]/8`) matches by address, not by text. Everything else is a host
 * name (or a glob over canonical targets) and matches as text, case-insensitively.
 */
import {
  ambiguousIpv4,
  formatIp,
  type IpAddress,
  type IpRange,
  isIpv4,
  parseIp,
  parseRange,
  rangeHolds,
  splitHostPort,
} from './addresses.js'

/** A net target, parsed: its spellings for text rules, and its address (when it is one) for address rules. */
export interface NetTarget {
  forms: string[]
  address?: IpAddress
  port?: number
}

/** An address rule: the range it names (a single address is a /32 or /128) and the port, if it names one. */
export interface AddressPattern {
  range: IpRange
  port?: number
}

/** `host:port`, with an IPv6 address in brackets: how the sandbox hands a destination to the policy. */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`
}

/** The host as the rules see it: an address in canonical text (IPv6 in brackets), else the lower-cased name. */
function canonicalHost(address: IpAddress): string {
  return isIpv4(address) ? formatIp(address) : `[${formatIp(address)}]`
}

/**
 * `host:port` and `host` (a rule naming only the host covers every port), lower-cased and with an IP
 * address in its canonical spelling; or why the target is not one.
 */
export function netTarget(target: string, display = target): NetTarget | { problem: string } {
  const lowered = target.trim().toLowerCase()
  const notOne = { problem: `"${display}" is not a host or host:port.` }
  if (lowered === '' || /[\s\x00-\x1f\x7f/\\@%]/.test(lowered)) return notOne
  const split = splitHostPort(lowered)
  if (!split) return notOne
  const host = split.bracketed ? split.host : split.host.replace(/\.$/, '')
  const address = parseIp(host)
  if (!address) {
    if (ambiguousIpv4(host)) {
      return {
        problem: `"${display}" is not a host or host:port: its host is an ambiguous IPv4 address; write it as four decimal numbers.`,
      }
    }
    if (split.bracketed || host === '' || host.includes(':') || /[[\]]/.test(host)) return notOne
  } else if (split.bracketed && !host.includes(':')) {
    return notOne
  }
  const text = address ? canonicalHost(address) : host
  const forms = split.port === undefined ? [text] : [`${text}:${split.port}`, text]
  return {
    forms,
    ...(address ? { address } : {}),
    ...(split.port !== undefined ? { port: split.port } : {}),
  }
}

/**
 * What a net rule pattern names when it names an address or a range; undefined when it is a host name or a
 * glob (a pattern with `*` or `?` never names an address); a string saying what is wrong when it looks like
 * an address or a range but is not one (a `/`, brackets, more than one `:`, or a numeric last label).
 */
export function readAddressPattern(pattern: string): AddressPattern | string | undefined {
  const text = pattern.trim().toLowerCase()
  if (/[*?]/.test(text)) {
    return text.includes('/')
      ? `"${pattern}" mixes * or ? with a CIDR range; write the range alone`
      : undefined
  }
  let body: string
  let port: string | undefined
  const bracketed = /^\[([^\]/]*)(\/[^\]]*)?\](\/[^:]*)?(?::(.*))?$/.exec(text)
  if (bracketed) {
    const [, address, inner, outer] = bracketed
    if (inner && outer) return `"${pattern}" gives the prefix twice`
    body = `${address}${inner ?? outer ?? ''}`
    port = bracketed[4]
    if (!address?.includes(':')) return `"${pattern}" puts brackets around what is not an IPv6 address`
  } else if (text.includes('[') || text.includes(']')) {
    return `"${pattern}" is not a host, an IP address or a CIDR range`
  } else if (text.split(':').length > 2) {
    // An IPv6 address or range without brackets has no port.
    body = text
  } else {
    const colon = text.indexOf(':')
    body = colon === -1 ? text : text.slice(0, colon)
    port = colon === -1 ? undefined : text.slice(colon + 1)
    const host = body.replace(/\.$/, '')
    if (!body.includes('/') && !ambiguousIpv4(host) && !parseIp(host)) return undefined
    if (!body.includes('/')) body = host
  }
  const range = parseRange(body)
  if (typeof range === 'string') return range
  if (port === undefined) return { range }
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65_535) {
    return `"${pattern}" has no valid port: expected 1 to 65535 after the ":"`
  }
  return { range, port: Number(port) }
}

/** Why a net rule pattern cannot be used, or undefined when it can. */
export function netPatternProblem(pattern: string): string | undefined {
  const read = readAddressPattern(pattern)
  return typeof read === 'string' ? read : undefined
}

/** The rules that name addresses and ranges, matched by address (few per policy: a list is enough). */
export class AddressRules {
  private readonly rules: Array<AddressPattern & { slot: number; index: number }> = []

  add(pattern: AddressPattern, slot: number, index: number): void {
    this.rules.push({ ...pattern, slot, index })
  }

  /** For each effect slot in the `effects` mask, lowers `found[slot]` to the first rule holding the target. */
  scan(address: IpAddress, port: number | undefined, effects: number, found: number[]): void {
    for (const { range, port: only, slot, index } of this.rules) {
      if (!(effects & (1 << slot)) || index >= found[slot]!) continue
      if (only !== undefined && only !== port) continue
      if (rangeHolds(range, address)) found[slot] = index
    }
  }
}
