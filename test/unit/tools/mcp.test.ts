/**
 * MCP tools as tether names, digests, validates, offers and reviews them: `server.tool` names, the digest a
 * run pins, calls' arguments within their limits (one reply's too), the names providers get, the diff an
 * approver reads, and the run's book of reviewed definitions.
 */
import { describe, expect, it } from 'vitest'
import { providerToolName } from '../../../src/model/index.js'
import { boundReply } from '../../../src/model/reply.js'
import { definitionText, lineDiff } from '../../../src/present/index.js'
import {
  MCP_ARGUMENT_BYTES,
  mcpToolDigest,
  readsOnly,
  splitMcpToolName,
  validateToolCall,
} from '../../../src/tools/index.js'
import { McpBook } from '../../../src/workflows/mcp.js'

const definition = { name: 'fs.read_file', description: 'Reads a file.', inputSchema: { type: 'object' } }

describe('MCP tool names and definitions', () => {
  it('names a tool server.tool, and digests exactly its name, description, schema and annotations', () => {
    expect(splitMcpToolName('github.create_issue')).toEqual({ server: 'github', tool: 'create_issue' })
    expect(splitMcpToolName('ev.get-env.v2')).toEqual({ server: 'ev', tool: 'get-env.v2' })
    expect(splitMcpToolName('GitHub.create')).toBeUndefined()
    expect(splitMcpToolName('exec')).toBeUndefined()
    const digest = mcpToolDigest(definition)
    expect(digest).toMatch(/^[0-9a-f]{64}$/)
    expect(mcpToolDigest({ ...definition })).toBe(digest)
    expect(mcpToolDigest({ ...definition, description: 'Reads a file. And more.' })).not.toBe(digest)
    expect(mcpToolDigest({ ...definition, annotations: { readOnlyHint: true } })).not.toBe(digest)
    expect(readsOnly({ annotations: { readOnlyHint: true } })).toBe(true)
    expect(readsOnly({ annotations: { readOnlyHint: true, destructiveHint: true } })).toBe(false)
  })

  it('validates a call: a JSON object of arguments within the limit, never a tool of tether', () => {
    expect(validateToolCall({ id: 'c', name: 'fs.read_file', args: { path: 'a' } })).toMatchObject({
      ok: true,
      call: { name: 'fs.read_file', args: { path: 'a' } },
    })
    expect(validateToolCall({ id: 'c', name: 'fs.list', args: undefined })).toMatchObject({
      ok: true,
      call: { args: {} },
    })
    expect(validateToolCall({ id: 'c', name: 'fs.read_file', args: ['a'] })).toMatchObject({
      ok: false,
      error: 'invalid arguments for fs.read_file: the arguments must be a JSON object',
    })
    const huge = { text: 'x'.repeat(MCP_ARGUMENT_BYTES) }
    expect(validateToolCall({ id: 'c', name: 'ev.echo', args: huge })).toMatchObject({
      ok: false,
      error: expect.stringContaining('the limit is 65,536 bytes'),
    })
    expect(validateToolCall({ id: 'c', name: 'Exec.x', args: {} })).toMatchObject({ ok: false })
  })

  it("counts MCP arguments in one reply's budget for history", () => {
    const half = { text: 'x'.repeat(40_000) }
    const reply = boundReply({
      text: '',
      toolCalls: [
        { id: 'a', name: 'ev.echo', args: half },
        { id: 'b', name: 'ev.echo', args: half },
      ],
    })
    expect(reply.toolCalls[0]!.invalid).toBeUndefined()
    expect(reply.toolCalls[1]!.invalid).toMatch(/^invalid arguments for ev\.echo: the calls before it/)
  })

  it('gives providers names they accept, and tether its own back', () => {
    expect(providerToolName('exec')).toBe('exec')
    expect(providerToolName('fs.read_file')).toBe('fs__read_file')
    expect(providerToolName('ev.get-env.v2')).toBe('ev__get-env_v2')
    const long = `server.${'t'.repeat(120)}`
    expect(providerToolName(long)).toMatch(/^[A-Za-z0-9_-]{64}$/)
    expect(providerToolName(long)).not.toBe(providerToolName(`${long}x`))
  })

  it('shows an approver what changed, line by line', () => {
    const before = definitionText(definition)
    const after = definitionText({ ...definition, description: 'Reads a file, and mails it.' })
    expect(lineDiff(before, after)).toBe(
      [
        '  name: fs.read_file',
        '  description:',
        '-   Reads a file.',
        '+   Reads a file, and mails it.',
        '  input schema:',
        '    {',
        '  … 3 unchanged lines',
      ].join('\n'),
    )
  })
})

describe("a run's book of MCP tools", () => {
  const listed = (digest: string, readOnly?: true) => ({
    name: 'fs.read_file',
    digest,
    ...(readOnly ? { readOnly } : {}),
  })
  const change = { name: 'fs.read_file', digest: 'b', reason: 'changed', diff: '' }

  it('pins a tool at first sight, withholds a change until it is approved, and remembers a refusal', () => {
    const book = new McpBook([{ name: 'fs', timeoutMs: 1_000 }], undefined)
    expect(book.take({ tools: [listed('a', true)], changes: [], unavailable: [] })).toEqual([])
    expect(book.offer()).toEqual([{ name: 'fs.read_file', digest: 'a' }])
    expect(book.state('fs.read_file')).toEqual({ offered: true, readOnly: true })
    expect(book.take({ tools: [listed('b')], changes: [change], unavailable: [] })).toEqual([change])
    expect(book.offer()).toEqual([])
    expect(book.state('fs.read_file')).toMatchObject({
      offered: false,
      why: expect.stringContaining('withheld'),
    })
    book.refuse(change)
    // Refused: not asked again for the same definition, and still withheld.
    expect(book.take({ tools: [listed('b')], changes: [change], unavailable: [] })).toEqual([])
    expect(book.state('fs.read_file')).toMatchObject({
      why: expect.stringContaining('the change was refused'),
    })
    book.accept(change)
    expect(book.offer()).toEqual([{ name: 'fs.read_file', digest: 'b' }])
    expect(new McpBook(book.servers, book.carry()).pinned()).toEqual({ 'fs.read_file': 'b' })
  })

  it('says why a tool is not offered, and tells the model of an unavailable server once', () => {
    const book = new McpBook([{ name: 'fs', timeoutMs: 1_000 }], undefined)
    book.take({ tools: [], changes: [], unavailable: [{ server: 'fs', reason: 'exited with code 1' }] })
    expect(book.state('gh.create')).toEqual({ offered: false, why: 'this run has no MCP server gh' })
    expect(book.state('fs.read_file')).toEqual({
      offered: false,
      why: 'the server fs is unavailable: exited with code 1',
    })
    let seq = 10
    expect(book.note(() => seq++)?.message).toEqual({
      role: 'user',
      content: "[mcp] Some MCP servers' tools are not offered now:\n- fs: exited with code 1",
    })
    expect(book.note(() => seq++)).toBeUndefined()
  })
})
