import { describe, expect, it } from 'vitest'
import { ADVICE, adviceFor } from '../../../src/workspace/index.js'

describe('adviceFor', () => {
  it.each([
    ["Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/x'", ADVICE.permission],
    ['cp: cannot create regular file /etc/hosts: Permission denied', ADVICE.permission],
    ['npm error code EPERM', ADVICE.permission],
    ['chown: changing ownership of x: Operation not permitted', ADVICE.permission],
    ["Error: EROFS: read-only file system, open '/nix/store/x'", ADVICE.readOnly],
    ['touch: cannot touch /usr/x: Read-only file system', ADVICE.readOnly],
    [
      'npm error request to https://registry.npmjs.org/x failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org',
      ADVICE.network,
    ],
    ['getaddrinfo EAI_AGAIN github.com', ADVICE.network],
    ['curl: (6) Could not resolve host: example.com', ADVICE.network],
    ['fatal: unable to access: Could not resolve host: github.com', ADVICE.network],
    ['connect ENETUNREACH 2606:4700::1:443 - Local (:::0)', ADVICE.network],
    ['ping: connect: Network is unreachable', ADVICE.network],
    ['go: github.com/x/y: dial tcp: lookup proxy.golang.org on 10.0.0.1:53: no such host', ADVICE.network],
    [
      'pip: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution',
      ADVICE.network,
    ],
    ['Error: connect ECONNREFUSED 140.82.112.3:443', ADVICE.network],
    ['curl: (7) Failed to connect to example.com port 443 after 3 ms: Connection refused', ADVICE.network],
  ])('%j → advice', (output, advice) => {
    expect(adviceFor(output)).toBe(advice)
  })

  it.each([
    ['Error: connect ECONNREFUSED 127.0.0.1:5432'],
    ['Error: connect ECONNREFUSED ::1:6379'],
    ['curl: (7) Failed to connect to localhost port 3000 after 0 ms: Connection refused'],
    ['FAIL src/a.test.ts > adds\nAssertionError: expected 2 to be 3'],
    ['error TS2322: Type string is not assignable to type number'],
    [''],
  ])('%j → no advice', (output) => {
    expect(adviceFor(output)).toBeUndefined()
  })

  it('gives one line that tells the model what to do', () => {
    for (const advice of Object.values(ADVICE)) {
      expect(advice).not.toContain('\n')
      expect(advice).toMatch(/workspace|offline/)
    }
  })
})
