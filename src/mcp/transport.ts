/**
 * The MCP stdio transport over a sandboxed service (exec's `startService`): newline-delimited JSON-RPC on
 * its stdin and stdout. The SDK's own stdio transport spawns the process itself, outside any sandbox; this
 * one speaks to a process tether started.
 */
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import type { Service } from '../exec/index.js'

/** Bytes one message may have: a server that sends more is cut off (its result would be bounded anyway). */
const MESSAGE_LIMIT = 8 * 1024 * 1024

export class ServiceTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  private readonly buffer = new ReadBuffer({ maxBufferSize: MESSAGE_LIMIT })
  private closed = false

  constructor(private readonly service: Service) {}

  async start(): Promise<void> {
    this.service.stdout.on('data', (chunk: Buffer) => {
      try {
        this.buffer.append(chunk)
        for (let message = this.buffer.readMessage(); message; message = this.buffer.readMessage())
          this.onmessage?.(message)
      } catch (error) {
        // A line that is not JSON-RPC, or one too long: the server speaks no MCP we can trust; end it.
        this.onerror?.(error as Error)
        void this.close()
      }
    })
    this.service.stdin.on('error', (error) => this.onerror?.(error))
    void this.service.exited.then(() => this.finish())
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.closed || this.service.stdin.destroyed) {
        reject(new Error('the server has exited'))
        return
      }
      this.service.stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()))
    })
  }

  async close(): Promise<void> {
    await this.service.stop()
    this.finish()
  }

  private finish(): void {
    if (this.closed) return
    this.closed = true
    this.buffer.clear()
    this.onclose?.()
  }
}
