/**
 * IP addresses judged as addresses, not as text. Every spelling of one address (`127.0.0.1`,
 * `::ffff:7f00:1`, `0:0:0:0:0:ffff:127.0.0.1`) parses to the same 16 bytes, a range (`10.0.0.0/8`,
 * `fc00::/7`) holds what it holds whatever the spelling, and every special-purpose range has a name. Pure:
 * the policy's net rules and the sandbox's egress proxy share it.
 *
 * An IPv4 address is held as its IPv4-mapped IPv6 form (`::ffff:a.b.c.d`), so one comparison serves both
 * families, and the deprecated IPv4-compatible form (`::a.b.c.d`) is read as the IPv4 address it names.
 * IPv4 is four decimal numbers without leading zeros, nothing else: resolvers also read `127.1`, `0x7f.1`,
 * `2130706433` and `0177.0.0.1` as addresses (the last as octal), so such a spelling is ambiguous — never an
 * address here, and never a host name either (see `ambiguousIpv4`). A zone id (`fe80::1%eth0`) is not an
 * address.
 */

/** 16 bytes; IPv4 as `::ffff:a.b.c.d`. */
export type IpAddress = Uint8Array

/** A CIDR range: the addresses whose first `bits` bits are those of `base` (IPv4 ranges count from bit 96). */
export interface IpRange {
  readonly base: IpAddress
  readonly bits: number
}

/** The special-purpose range an address falls in. */
export interface SpecialRange {
  /** What the range is, for people: `loopback`, `private`, `unique local (ULA)`, … */
  kind: string
  /** The range in CIDR notation. */
  range: string
  /** The host itself (loopback, unspecified): a destination that always means "this machine". */
  self: boolean
}

const V4_PART = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)'
const V4 = new RegExp(`^${V4_PART}(?:\\.${V4_PART}){3}$`)
const HEX_GROUP = /^[0-9a-f]{1,4}$/i

function v4Parts(text: string): number[] | undefined {
  return V4.test(text) ? text.split('.').map(Number) : undefined
}

function mapped(parts: readonly number[]): IpAddress {
  const bytes = new Uint8Array(16)
  bytes[10] = 0xff
  bytes[11] = 0xff
  bytes.set(parts, 12)
  return bytes
}

function zero(bytes: IpAddress, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return false
  return true
}

/** The 16-bit words of one side of `::`, with an IPv4 tail where allowed; undefined when malformed. */
function words(part: string, v4Tail: boolean): number[] | undefined {
  if (part === '') return []
  const groups = part.split(':')
  const result: number[] = []
  for (const [i, group] of groups.entries()) {
    if (v4Tail && i === groups.length - 1 && group.includes('.')) {
      const v4 = v4Parts(group)
      if (!v4) return undefined
      result.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!)
    } else if (HEX_GROUP.test(group)) {
      result.push(Number.parseInt(group, 16))
    } else {
      return undefined
    }
  }
  return result
}

function parseV6(text: string): IpAddress | undefined {
  if (text.length > 45) return undefined
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const head = words(halves[0]!, halves.length === 1)
  const tail = halves.length === 2 ? words(halves[1]!, true) : []
  if (!head || !tail) return undefined
  const missing = 8 - head.length - tail.length
  // Without `::` there must be eight words; `::` stands for at least one.
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined
  const all = [...head, ...new Array<number>(missing).fill(0), ...tail]
  const bytes = new Uint8Array(16)
  for (const [i, word] of all.entries()) {
    bytes[2 * i] = word >> 8
    bytes[2 * i + 1] = word & 0xff
  }
  return bytes
}

/** The address `text` spells (IPv4 dotted quad or IPv6, without brackets), or undefined. */
export function parseIp(text: string): IpAddress | undefined {
  const v4 = v4Parts(text)
  if (v4) return mapped(v4)
  if (!text.includes(':')) return undefined
  const bytes = parseV6(text)
  if (!bytes) return undefined
  // IPv4-compatible (`::a.b.c.d`, deprecated): the IPv4 address it names. `::` and `::1` are themselves.
  if (zero(bytes, 0, 12) && !(zero(bytes, 12, 15) && (bytes[15] as number) <= 1)) {
    bytes[10] = 0xff
    bytes[11] = 0xff
  }
  return bytes
}

/** Whether the address is an IPv4 address. */
export function isIpv4(address: IpAddress): boolean {
  return zero(address, 0, 10) && address[10] === 0xff && address[11] === 0xff
}

/** The canonical text: IPv4 dotted, IPv6 as RFC 5952 writes it (lower case, longest zero run as `::`). */
export function formatIp(address: IpAddress): string {
  if (isIpv4(address)) return [...address.subarray(12)].join('.')
  const groups: number[] = []
  for (let i = 0; i < 16; i += 2) groups.push(((address[i] as number) << 8) | (address[i + 1] as number))
  let best = -1
  let length = 1
  for (let i = 0; i < 8; ) {
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > length) [best, length] = [i, j - i]
    i = j === i ? i + 1 : j
  }
  const hex = (list: number[]) => list.map((group) => group.toString(16)).join(':')
  if (best === -1) return hex(groups)
  return `${hex(groups.slice(0, best))}::${hex(groups.slice(best + length))}`
}

/** The canonical text of the address `text` spells, or undefined when it spells none. */
export function canonicalIp(text: string): string | undefined {
  const address = parseIp(text)
  return address && formatIp(address)
}

export function sameIp(a: IpAddress, b: IpAddress): boolean {
  for (let i = 0; i < 16; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * Whether a resolver would read `host` as an IPv4 address although it is not four plain decimal numbers:
 * its last label is a number (`127.1`, `0x7f.0.0.1`, `2130706433`, `010.0.0.1`, `1.2.3.4.5`). No top-level
 * domain is numeric, so such a text is never a host name either.
 */
export function ambiguousIpv4(host: string): boolean {
  const text = host.endsWith('.') ? host.slice(0, -1) : host
  if (V4.test(text)) return false
  const last = text.slice(text.lastIndexOf('.') + 1)
  return /^(?:0x[0-9a-f]*|\d+)$/i.test(last)
}

/** Why `text` is not a CIDR range, or the range (`10.0.0.0/8`, `fd00::/8`; a bare address is a whole range). */
export function parseRange(text: string): IpRange | string {
  const slash = text.indexOf('/')
  const body = slash === -1 ? text : text.slice(0, slash)
  const base = parseIp(body)
  if (!base) {
    return ambiguousIpv4(body)
      ? `"${text}" is not an IP address: write IPv4 as four decimal numbers without leading zeros`
      : `"${text}" is not an IP address`
  }
  const v4 = !body.includes(':')
  const most = v4 ? 32 : 128
  if (slash === -1) return { base, bits: 128 }
  const prefix = text.slice(slash + 1)
  if (!/^(?:0|[1-9]\d{0,2})$/.test(prefix) || Number(prefix) > most) {
    return `"${text}" is not a CIDR range: an ${v4 ? 'IPv4' : 'IPv6'} prefix is 0 to ${most} bits`
  }
  const bits = Number(prefix) + (v4 ? 96 : 0)
  const start = masked(base, bits)
  if (!sameIp(start, base)) {
    return `"${text}" is not a CIDR range: it has bits set after the prefix (the range is ${formatRange({ base: start, bits })})`
  }
  return { base, bits }
}

function masked(address: IpAddress, bits: number): IpAddress {
  const bytes = new Uint8Array(address)
  for (let i = 0; i < 16; i++) {
    const keep = Math.max(0, Math.min(8, bits - 8 * i))
    bytes[i] = (bytes[i] as number) & ((0xff << (8 - keep)) & 0xff)
  }
  return bytes
}

/** Whether `range` holds `address`. */
export function rangeHolds(range: IpRange, address: IpAddress): boolean {
  const whole = range.bits >> 3
  for (let i = 0; i < whole; i++) if (range.base[i] !== address[i]) return false
  const rest = range.bits & 7
  if (rest === 0) return true
  const mask = (0xff << (8 - rest)) & 0xff
  return ((range.base[whole] as number) & mask) === ((address[whole] as number) & mask)
}

/** CIDR text; an IPv4 range (one inside `::ffff:0:0/96`) is written as IPv4. */
export function formatRange(range: IpRange): string {
  return range.bits >= 96 && isIpv4(range.base)
    ? `${formatIp(range.base)}/${range.bits - 96}`
    : `${formatIp(range.base)}/${range.bits}`
}

function range(text: string): IpRange {
  const parsed = parseRange(text)
  if (typeof parsed === 'string') throw new Error(parsed)
  return parsed
}

/**
 * Every range that is not the public internet (IANA's special-purpose registries), most specific first.
 * IPv6 outside 2000::/3 is reserved as a whole, and an IPv4 address is judged by the IPv4 rows alone.
 */
const SPECIAL: ReadonlyArray<SpecialRange & { holds: IpRange; v4: boolean }> = (
  [
    ['0.0.0.0/8', 'unspecified', true],
    ['10.0.0.0/8', 'private'],
    ['100.64.0.0/10', 'shared address space (CGNAT)'],
    ['127.0.0.0/8', 'loopback', true],
    ['169.254.0.0/16', 'link-local'],
    ['172.16.0.0/12', 'private'],
    ['192.0.0.0/24', 'reserved (IETF protocol assignments)'],
    ['192.0.2.0/24', 'documentation'],
    ['192.168.0.0/16', 'private'],
    ['198.18.0.0/15', 'reserved (benchmarking)'],
    ['198.51.100.0/24', 'documentation'],
    ['203.0.113.0/24', 'documentation'],
    ['224.0.0.0/4', 'multicast'],
    ['255.255.255.255/32', 'broadcast'],
    ['240.0.0.0/4', 'reserved'],
    ['::/128', 'unspecified', true],
    ['::1/128', 'loopback', true],
    ['64:ff9b::/96', 'NAT64'],
    ['64:ff9b:1::/48', 'NAT64 (local use)'],
    ['100::/64', 'reserved (discard only)'],
    ['2001::/32', 'Teredo'],
    ['2001::/23', 'reserved (IETF protocol assignments)'],
    ['2001:db8::/32', 'documentation'],
    ['2002::/16', '6to4'],
    ['3fff::/20', 'documentation'],
    ['fc00::/7', 'unique local (ULA)'],
    ['fe80::/10', 'link-local'],
    ['fec0::/10', 'site-local (deprecated)'],
    ['ff00::/8', 'multicast'],
    ['::/3', 'reserved'],
    ['4000::/2', 'reserved'],
    ['8000::/1', 'reserved'],
  ] as const
).map(([text, kind, self]) => {
  const holds = range(text)
  return { kind, range: text, self: self === true, holds, v4: holds.bits >= 96 && isIpv4(holds.base) }
})

/** The special-purpose range `address` is in, or undefined for a public (globally reachable) address. */
export function specialRange(address: IpAddress): SpecialRange | undefined {
  const v4 = isIpv4(address)
  // IPv4 rows judge IPv4 addresses and IPv6 rows the rest (`::/3` holds `::ffff:0:0/96` too).
  for (const row of SPECIAL) {
    if (row.v4 === v4 && rangeHolds(row.holds, address))
      return { kind: row.kind, range: row.range, self: row.self }
  }
  return undefined
}

const NAT64 = range('64:ff9b::/96')

/** The IPv4 address a well-known-prefix NAT64 address (`64:ff9b::a.b.c.d`) stands for. */
export function nat64Ipv4(address: IpAddress): IpAddress | undefined {
  return rangeHolds(NAT64, address) ? mapped([...address.subarray(12)]) : undefined
}

/**
 * `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address (which has no port), split; the host
 * without brackets. Undefined when it is none of these or the port is not 1 to 65535.
 */
export function splitHostPort(text: string): { host: string; port?: number; bracketed: boolean } | undefined {
  let host: string
  let port: string | undefined
  let bracketed = false
  if (text.startsWith('[')) {
    const match = /^\[([^\]]*)\](?::([^:]*))?$/.exec(text)
    if (!match) return undefined
    host = match[1] as string
    port = match[2]
    bracketed = true
  } else {
    const colons = text.split(':').length - 1
    if (colons === 1) [host, port] = text.split(':') as [string, string]
    else host = text
  }
  if (port === undefined) return { host, bracketed }
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65_535) return undefined
  return { host, port: Number(port), bracketed }
}
