/**
 * What the model layer costs on top of the model itself, measured side by side in one run:
 * - one `generate` through the AI SDK provider vs a bare `fetch` of the same chat-completions call, both
 *   against a local server that answers at once (so the difference is tether + SDK overhead);
 * - `fitTranscript` and the scripted model on a 1,000-message transcript.
 * Run: npx tsx bench/model.ts
 */
import { performance } from 'node:perf_hooks'
import {
  estimateTokens,
  fitTranscript,
  providerFromEnv,
  scriptedProvider,
  type TranscriptMessage,
} from '../src/model/index.js'
import { openAiChat, startLlmServer } from '../test/support/llm-server.js'

const CALLS = 300
const ROUNDS = 3

async function timePerCall(calls: number, run: () => Promise<unknown> | unknown): Promise<number> {
  const start = performance.now()
  for (let i = 0; i < calls; i++) await run()
  return (performance.now() - start) / calls
}

function longTranscript(exchanges: number, outputChars: number): TranscriptMessage[] {
  const messages: TranscriptMessage[] = [{ role: 'user', content: 'Make the failing test pass.' }]
  for (let n = 0; n < exchanges; n++) {
    messages.push(
      {
        role: 'assistant',
        text: 'Next.',
        toolCalls: [{ id: `c${n}`, name: 'exec', args: { argv: ['npm', 'test'] } }],
      },
      { role: 'tool', results: [{ callId: `c${n}`, name: 'exec', output: 'x'.repeat(outputChars) }] },
    )
  }
  return messages
}

const server = await startLlmServer()
try {
  const provider = providerFromEnv({ TETHER_OPENAI_BASE_URL: server.baseUrl, TETHER_MODEL: 'bench' })
  const question: TranscriptMessage[] = [{ role: 'user', content: 'Make the failing test pass.' }]
  const answer = openAiChat({ text: 'ok', calls: [{ id: 'c1', name: 'read_file', args: { path: 'a.ts' } }] })
  const viaProvider = () => {
    server.reply(answer)
    return provider.generate({ system: 'You are tether.', messages: question })
  }
  await timePerCall(50, viaProvider) // warm up (JIT, connection pool)
  // The bare call sends exactly the body the provider sent: same tools, same transcript, same size.
  const body = JSON.stringify(server.requests.at(-1)?.body)
  const viaFetch = async () => {
    server.reply(answer)
    const response = await fetch(`${server.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    return response.json()
  }
  await timePerCall(50, viaFetch)
  for (let round = 1; round <= ROUNDS; round++) {
    const sdk = await timePerCall(CALLS, viaProvider)
    const bare = await timePerCall(CALLS, viaFetch)
    server.reset()
    console.log(
      `round ${round}: generate ${sdk.toFixed(3)} ms/call, bare fetch ${bare.toFixed(3)} ms/call, ` +
        `ratio ${(sdk / bare).toFixed(2)}, overhead ${(sdk - bare).toFixed(3)} ms/call (${CALLS} calls each)`,
    )
  }
} finally {
  await server.close()
}

const transcript = longTranscript(500, 2000) // 1,001 messages, ~1 MB of tool output
const total = estimateTokens(transcript)
const fitCalls = 50
const fitElide = await timePerCall(fitCalls, () => fitTranscript(transcript, Math.floor(total / 4)))
const fitFits = await timePerCall(fitCalls, () => fitTranscript(transcript, total))
console.log(
  `fitTranscript, ${transcript.length} messages (${total} estimated tokens): ${fitElide.toFixed(3)} ms when ` +
    `eliding to a quarter, ${fitFits.toFixed(3)} ms when it already fits`,
)
const scripted = scriptedProvider({ turns: [] })
const scriptedMs = await timePerCall(fitCalls, () => scripted.generate({ system: 's', messages: transcript }))
console.log(
  `scripted generate on the same transcript (fits in 200,000 tokens after eliding): ${scriptedMs.toFixed(3)} ms`,
)
