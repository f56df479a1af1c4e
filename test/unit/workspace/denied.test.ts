/** Whether a part of the workspace holds a file the policy denies reading (asked for recursive readers). */
import { describe, expect, it } from 'vitest'
import { Policy } from '../../../src/policy/index.js'
import { holdsDeniedFile } from '../../../src/workspace/index.js'
import { sandbox } from './fixture.js'

const policy = Policy.tiered().withReadOnlyCommands()
const denied = (path: string) => policy.check('read', path).effect === 'deny'

describe('holdsDeniedFile', () => {
  it('finds a denied file anywhere under the path, and nothing where there is none', async () => {
    const box = await sandbox()
    await box.files({
      'src/a.ts': 'x',
      'src/deep/b.ts': 'y',
      'config/prod/.env': 'KEY=1',
      'certs/server.pem': '-',
    })
    expect(holdsDeniedFile(box.root, 'src', denied)).toBe(false)
    expect(holdsDeniedFile(box.root, 'src/a.ts', denied)).toBe(false)
    expect(holdsDeniedFile(box.root, 'config', denied)).toBe(true)
    expect(holdsDeniedFile(box.root, '.', denied)).toBe(true)
    expect(holdsDeniedFile(box.root, 'certs/server.pem', denied)).toBe(true)
  })

  it('counts a link that leaves the workspace or names a denied file, paths outside, and parts too large to walk', async () => {
    const box = await sandbox()
    await box.files({ 'src/a.ts': 'x', 'lib/b.ts': 'y' })
    await box.link('src/out', box.outside)
    await box.link('lib/key', '../.env')
    expect(holdsDeniedFile(box.root, 'src', denied)).toBe(true)
    expect(holdsDeniedFile(box.root, 'lib', denied)).toBe(true)
    expect(holdsDeniedFile(box.root, '../outside', denied)).toBe(true)
    await box.files({ 'many/1': '', 'many/2': '', 'many/3': '' })
    expect(holdsDeniedFile(box.root, 'many', denied, 2)).toBe(true)
    expect(holdsDeniedFile(box.root, 'many', denied, 3)).toBe(false)
  })

  it('lets the policy auto-allow a recursive reader only where nothing is denied', async () => {
    const box = await sandbox()
    await box.files({ 'src/a.ts': 'x', '.env': 'KEY=1' })
    const context = { holdsDenied: (path: string) => holdsDeniedFile(box.root, path, denied) }
    expect(policy.checkExec(['grep', '-rn', 'TODO', 'src'], context).effect).toBe('allow')
    expect(policy.checkExec(['grep', '-rn', 'KEY', '.'], context).effect).toBe('ask')
    expect(policy.checkExec(['rg', 'KEY'], context).effect).toBe('ask')
  })
})
