/**
 * IP addresses judged as addresses: every spelling of one address is the same address, every special-purpose
 * range is named, and a range holds what it holds whatever the spelling.
 */
import { describe, expect, it } from 'vitest'
import {
  ambiguousIpv4,
  canonicalIp,
  formatIp,
  formatRange,
  nat64Ipv4,
  parseIp,
  parseRange,
  rangeHolds,
  specialRange,
  splitHostPort,
} from '../../../src/policy/index.js'

const kindOf = (text: string) => {
  const address = parseIp(text)
  expect(address, text).toBeDefined()
  return specialRange(address!)
}

describe('spellings', () => {
  it('reads every spelling of the host’s loopback that reached it through the proxy as loopback', () => {
    for (const spelling of [
      '127.0.0.1',
      '::ffff:7f00:1',
      '::FFFF:127.0.0.1',
      '0:0:0:0:0:ffff:7f00:1',
      '0:0:0:0:0:ffff:127.0.0.1',
      '::127.0.0.1',
      '127.255.0.9',
    ]) {
      expect(kindOf(spelling), spelling).toEqual({ kind: 'loopback', range: '127.0.0.0/8', self: true })
    }
    for (const spelling of ['::1', '0::1', '0:0:0:0:0:0:0:1', '0000:0000::0001']) {
      expect(kindOf(spelling), spelling).toEqual({ kind: 'loopback', range: '::1/128', self: true })
    }
    for (const spelling of ['::', '0::', '0:0:0:0:0:0:0:0']) {
      expect(kindOf(spelling), spelling).toEqual({ kind: 'unspecified', range: '::/128', self: true })
    }
    expect(kindOf('0.0.0.0')).toMatchObject({ kind: 'unspecified', self: true })
  })

  it('writes one canonical text per address: IPv4 dotted (mapped and compatible forms too), IPv6 per RFC 5952', () => {
    expect(canonicalIp('::ffff:a9fe:a9fe')).toBe('169.254.169.254')
    expect(canonicalIp('0:0:0:0:0:FFFF:169.254.169.254')).toBe('169.254.169.254')
    expect(canonicalIp('::169.254.169.254')).toBe('169.254.169.254')
    expect(canonicalIp('2001:0DB8:0000:0000:0000:0000:0000:0001')).toBe('2001:db8::1')
    expect(canonicalIp('2001:db8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1')
    expect(canonicalIp('2001:db8:0:1:1:1:1:1')).toBe('2001:db8:0:1:1:1:1:1')
    expect(canonicalIp('fe80::')).toBe('fe80::')
    expect(canonicalIp('64:ff9b::127.0.0.1')).toBe('64:ff9b::7f00:1')
  })

  it('refuses what is not exactly one address: odd IPv4 forms, zone ids, bad groups', () => {
    for (const text of [
      '127.1',
      '0x7f.0.0.1',
      '0177.0.0.1',
      '2130706433',
      '127.0.0.01',
      '256.0.0.1',
      '1.2.3.4.5',
      ' 127.0.0.1',
      'fe80::1%eth0',
      'fe80::1%25eth0',
      '[::1]',
      '1::2::3',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7',
      '::1:2:3:4:5:6:7:8',
      '12345::',
      ':1::',
      '::ffff:127.1',
      'localhost',
      '',
    ]) {
      expect(parseIp(text), text).toBeUndefined()
    }
  })

  it('calls a spelling ambiguous when a resolver would read it as an IPv4 number', () => {
    for (const text of [
      '127.1',
      '0x7f.1',
      '0x7f000001',
      '2130706433',
      '0177.0.0.1',
      '1.2.3.4.5',
      'a.0x',
      '010.0.0.1.',
    ]) {
      expect(ambiguousIpv4(text), text).toBe(true)
    }
    for (const text of ['127.0.0.1', '127.0.0.1.', 'example.com', '1password.com', 'a1.b2', 'x.y0']) {
      expect(ambiguousIpv4(text), text).toBe(false)
    }
  })
})

describe('ranges', () => {
  it('names every range the proxy must not reach by default', () => {
    const cases: Array<[string, string, string]> = [
      ['10.1.2.3', 'private', '10.0.0.0/8'],
      ['172.31.255.1', 'private', '172.16.0.0/12'],
      ['192.168.1.1', 'private', '192.168.0.0/16'],
      ['169.254.169.254', 'link-local', '169.254.0.0/16'],
      ['::ffff:a9fe:a9fe', 'link-local', '169.254.0.0/16'],
      ['fe80::1', 'link-local', 'fe80::/10'],
      ['100.100.100.200', 'shared address space (CGNAT)', '100.64.0.0/10'],
      ['fd00:ec2::254', 'unique local (ULA)', 'fc00::/7'],
      ['fc00::1', 'unique local (ULA)', 'fc00::/7'],
      ['64:ff9b::a9fe:a9fe', 'NAT64', '64:ff9b::/96'],
      ['64:ff9b:1::a', 'NAT64 (local use)', '64:ff9b:1::/48'],
      ['224.0.0.251', 'multicast', '224.0.0.0/4'],
      ['ff02::1', 'multicast', 'ff00::/8'],
      ['255.255.255.255', 'broadcast', '255.255.255.255/32'],
      ['240.0.0.1', 'reserved', '240.0.0.0/4'],
      ['192.0.2.7', 'documentation', '192.0.2.0/24'],
      ['2001:db8::1', 'documentation', '2001:db8::/32'],
      ['2002:7f00:1::', '6to4', '2002::/16'],
      ['2001:0:4136:e378::1', 'Teredo', '2001::/32'],
      ['::ffff:0:7f00:1', 'reserved', '::/3'],
      ['4000::1', 'reserved', '4000::/2'],
    ]
    for (const [text, kind, range] of cases) {
      expect(kindOf(text), text).toEqual({ kind, range, self: false })
    }
  })

  it('leaves public addresses alone', () => {
    for (const text of [
      '8.8.8.8',
      '1.1.1.1',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700::1111',
      '2a00:1450::1',
    ]) {
      expect(kindOf(text), text).toBeUndefined()
    }
  })

  it('reads the IPv4 address behind a NAT64 address', () => {
    expect(formatIp(nat64Ipv4(parseIp('64:ff9b::a9fe:a9fe')!)!)).toBe('169.254.169.254')
    expect(nat64Ipv4(parseIp('2001:db8::1')!)).toBeUndefined()
  })

  it('holds every spelling of what a CIDR range holds, and nothing outside it', () => {
    const holds = (range: string, address: string) => {
      const parsed = parseRange(range)
      if (typeof parsed === 'string') throw new Error(parsed)
      return rangeHolds(parsed, parseIp(address)!)
    }
    expect(holds('10.0.0.0/8', '10.255.0.1')).toBe(true)
    expect(holds('10.0.0.0/8', '::ffff:a00:5')).toBe(true)
    expect(holds('10.0.0.0/8', '11.0.0.1')).toBe(false)
    expect(holds('172.16.0.0/12', '172.31.0.1')).toBe(true)
    expect(holds('172.16.0.0/12', '172.32.0.1')).toBe(false)
    expect(holds('169.254.169.254', '::ffff:169.254.169.254')).toBe(true)
    expect(holds('::ffff:0:0/96', '8.8.8.8')).toBe(true)
    expect(holds('fd00::/8', 'fd00:ec2::254')).toBe(true)
    expect(holds('fd00::/8', 'fe00::1')).toBe(false)
    expect(holds('0.0.0.0/0', '::1')).toBe(false)
    expect(holds('::/0', '2001:db8::1')).toBe(true)
  })

  it('says what is wrong with a malformed range', () => {
    expect(parseRange('10.0.0.0/33')).toBe(
      '"10.0.0.0/33" is not a CIDR range: an IPv4 prefix is 0 to 32 bits',
    )
    expect(parseRange('fd00::/129')).toBe('"fd00::/129" is not a CIDR range: an IPv6 prefix is 0 to 128 bits')
    expect(parseRange('10.0.0.5/8')).toBe(
      '"10.0.0.5/8" is not a CIDR range: it has bits set after the prefix (the range is 10.0.0.0/8)',
    )
    expect(parseRange('10.0.0.0/08')).toMatch(/is not a CIDR range/)
    expect(parseRange('10.0.0.0/')).toMatch(/is not a CIDR range/)
    expect(parseRange('127.1/8')).toMatch(/not an IP address: write IPv4 as four decimal numbers/)
    expect(parseRange('example.com/8')).toBe('"example.com/8" is not an IP address')
    const range = parseRange('::ffff:10.0.0.0/104')
    expect(typeof range !== 'string' && formatRange(range)).toBe('10.0.0.0/8')
  })
})

describe('host and port', () => {
  it('splits names, bracketed IPv6 and bare IPv6 (which has no port)', () => {
    expect(splitHostPort('example.com:443')).toEqual({ host: 'example.com', port: 443, bracketed: false })
    expect(splitHostPort('example.com')).toEqual({ host: 'example.com', bracketed: false })
    expect(splitHostPort('[::1]:80')).toEqual({ host: '::1', port: 80, bracketed: true })
    expect(splitHostPort('[::1]')).toEqual({ host: '::1', bracketed: true })
    expect(splitHostPort('::1:80')).toEqual({ host: '::1:80', bracketed: false })
    for (const text of ['a:0', 'a:65536', 'a:', 'a:x', '[::1]:', '[::1]x', '[::1']) {
      expect(splitHostPort(text), text).toBeUndefined()
    }
  })
})
