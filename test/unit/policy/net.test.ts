/**
 * Net rules meet addresses, not spellings: a deny of an IP address holds for every way of writing it, a
 * CIDR range holds what is in it, and a rule pattern that looks like an address but is none is an error.
 */
import { describe, expect, it } from 'vitest'
import { hostPort, Policy, PolicyError } from '../../../src/policy/index.js'

const metadataSpellings = [
  '169.254.169.254',
  '169.254.169.254:80',
  '[::ffff:a9fe:a9fe]:80',
  '[::FFFF:169.254.169.254]',
  '[0:0:0:0:0:ffff:a9fe:a9fe]:80',
  '[::169.254.169.254]:80',
  '::ffff:a9fe:a9fe',
]

describe('net rules that name addresses', () => {
  it('a deny of an IP address meets every spelling of it', () => {
    const policy = Policy.permissive().layer('operator').denyNet('169.254.169.254')
    for (const target of metadataSpellings) {
      const verdict = policy.check('net', target)
      expect(verdict, target).toMatchObject({ effect: 'deny', rule: '169.254.169.254', layer: 'operator' })
    }
    expect(policy.check('net', '169.254.169.253:80').effect).toBe('allow')
  })

  it('a deny written in another spelling meets the canonical one', () => {
    const policy = Policy.permissive().layer('operator').denyNet('[::FFFF:A9FE:A9FE]:80')
    expect(policy.check('net', '169.254.169.254:80').effect).toBe('deny')
    expect(policy.check('net', '169.254.169.254:443').effect).toBe('allow')
  })

  it('a CIDR range allows what it holds, at every port or at the one it names', () => {
    const policy = Policy.strict()
      .layer('operator')
      .allowNet('10.0.0.0/8')
      .allowNet('192.168.7.0/24:443')
      .allowNet('[fd00::]/8:8443')
    expect(policy.check('net', '10.200.3.4:5432')).toMatchObject({ effect: 'allow', rule: '10.0.0.0/8' })
    expect(policy.check('net', '[::ffff:a00:1]:22').effect).toBe('allow')
    expect(policy.check('net', '11.0.0.1:80').effect).toBe('deny')
    expect(policy.check('net', '192.168.7.9:443').effect).toBe('allow')
    expect(policy.check('net', '192.168.7.9:80').effect).toBe('deny')
    expect(policy.check('net', '[fd00:ec2::254]:8443').effect).toBe('allow')
    expect(policy.check('net', '[fd00:ec2::254]:80').effect).toBe('deny')
    // A name is never an address: a range says nothing of it.
    expect(policy.check('net', '10.example.com:80').effect).toBe('deny')
  })

  it('a deny of a range beats an allow of an address inside it, as every deny beats every allow', () => {
    const policy = Policy.strict()
      .layer('operator')
      .denyNet('10.0.0.0/8')
      .layer('project')
      .allowNet('10.0.0.5')
    expect(policy.check('net', '10.0.0.5:443')).toMatchObject({ effect: 'deny', rule: '10.0.0.0/8' })
  })

  it('globs still match, over the canonical spelling', () => {
    const policy = Policy.permissive().layer('operator').denyNet('169.254.*')
    expect(policy.check('net', '[::ffff:a9fe:a9fe]:80').effect).toBe('deny')
  })

  it('refuses a target whose IPv4 spelling resolvers read differently, and a zone id', () => {
    const policy = Policy.permissive()
    for (const target of [
      '127.1:80',
      '0x7f.0.0.1',
      '2130706433:5432',
      '0177.0.0.1:80',
      '[fe80::1%eth0]:80',
    ]) {
      expect(policy.check('net', target).effect, target).toBe('deny')
    }
    expect(policy.check('net', '127.1:80').reason).toMatch(/ambiguous IPv4 address/)
  })

  it('says whether an allow rule names an address — its own or a range holding it, never a glob', () => {
    const policy = Policy.strict()
      .layer('operator')
      .allowNet('*')
      .allowNet('10.0.0.5:443')
      .allowNet('172.16.0.0/12')
      .denyNet('172.16.9.9')
    expect(policy.check('net', '10.9.9.9:443').effect).toBe('allow')
    expect(policy.namesAddress('10.9.9.9:443')).toBe(false)
    expect(policy.namesAddress('10.0.0.5:443')).toBe(true)
    expect(policy.namesAddress('[::ffff:10.0.0.5]:443')).toBe(true)
    expect(policy.namesAddress('10.0.0.5:80')).toBe(false)
    expect(policy.namesAddress('172.20.1.1:80')).toBe(true)
    // Named by the range, but denied by its own rule.
    expect(policy.namesAddress('172.16.9.9:80')).toBe(false)
    expect(policy.namesAddress('example.com:443')).toBe(false)
    expect(Policy.permissive().namesAddress('10.0.0.5:443')).toBe(false)
    expect(Policy.strict().layer('o').allowNet('10.*').namesAddress('10.0.0.5:443')).toBe(false)
  })

  it('hands IPv6 destinations to the policy in brackets', () => {
    expect(hostPort('fd00::1', 443)).toBe('[fd00::1]:443')
    expect(hostPort('10.0.0.1', 443)).toBe('10.0.0.1:443')
    expect(hostPort('example.com', 443)).toBe('example.com:443')
    const policy = Policy.strict().layer('o').allowNet('[fd00::1]:443')
    expect(policy.check('net', hostPort('fd00::1', 443)).effect).toBe('allow')
  })
})

describe('malformed address patterns', () => {
  const load = (pattern: string) =>
    Policy.fromSpec({
      preset: 'strict',
      layers: [{ name: 'operator', rules: [{ act: 'net', effect: 'allow', pattern }] }],
    })

  it.each([
    ['10.0.0.0/33', /"10\.0\.0\.0\/33" is not a CIDR range: an IPv4 prefix is 0 to 32 bits/],
    ['10.0.0.5/8', /has bits set after the prefix \(the range is 10\.0\.0\.0\/8\)/],
    ['fd00::/200', /an IPv6 prefix is 0 to 128 bits/],
    ['10.0.0.256', /"10\.0\.0\.256" is not an IP address/],
    ['127.1', /write IPv4 as four decimal numbers/],
    ['10.0.0.0/8:99999', /no valid port/],
    ['[10.0.0.1]:80', /brackets around what is not an IPv6 address/],
    ['10.*/8', /mixes \* or \? with a CIDR range/],
    ['example.com/path', /is not an IP address/],
    ['fe80::1%eth0', /is not an IP address/],
  ])('"%s" is a one-line PolicyError naming the field', (pattern, message) => {
    let error: unknown
    try {
      load(pattern)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(PolicyError)
    expect((error as PolicyError).field).toBe('layers[0].rules[0].pattern')
    expect((error as PolicyError).message).toMatch(/^layers\[0\]\.rules\[0\]\.pattern: /)
    expect((error as PolicyError).message).toMatch(message)
    expect((error as PolicyError).message).not.toContain('\n')
  })

  it('the builders refuse them too', () => {
    expect(() => Policy.strict().allowNet('10.0.0.0/33')).toThrow(PolicyError)
    expect(() => Policy.strict().allowNet('10.0.0.0/33')).toThrow(
      /^pattern: "10\.0\.0\.0\/33" is not a CIDR range/,
    )
    expect(() => Policy.strict().withRule('remembered', 'net', 'allow', '192.168.1.1/16')).toThrow(
      PolicyError,
    )
  })

  it('leaves host names, globs and other acts alone', () => {
    expect(() => load('registry.npmjs.org')).not.toThrow()
    expect(() => load('*.internal:443')).not.toThrow()
    expect(() => load('10.0.0.0/8')).not.toThrow()
    expect(() => load('[::1]:80')).not.toThrow()
    expect(() => Policy.strict().allowRead('src/10.0.0.0/33')).not.toThrow()
  })
})
