/**
 * A TCP forwarder on loopback that a test can shut and open: while shut, it cuts the connections it carries
 * and drops new ones at once. A test puts it between one party and a server to decide which of two
 * racing events reaches the server first.
 */
import { connect, createServer, type Socket } from 'node:net'

export interface Gate {
  /** `127.0.0.1:port` to connect to instead of the target. */
  address: string
  shut(): void
  open(): void
  close(): Promise<void>
}

export async function startGate(target: { host: string; port: number }): Promise<Gate> {
  let shut = false
  const sockets = new Set<Socket>()
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
  }
  const server = createServer((inbound) => {
    track(inbound)
    if (shut) {
      inbound.destroy()
      return
    }
    const outbound = connect(target.port, target.host)
    track(outbound)
    inbound.pipe(outbound).pipe(inbound)
    inbound.on('close', () => outbound.destroy())
    outbound.on('close', () => inbound.destroy())
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const { port } = server.address() as { port: number }
  const cut = () => {
    for (const socket of sockets) socket.destroy()
  }
  return {
    address: `127.0.0.1:${port}`,
    shut() {
      shut = true
      cut()
    },
    open() {
      shut = false
    },
    async close() {
      cut()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
