/**
 * The tether worker process: serves `agentRun` and its activities on one task queue.
 *
 * Configuration (src/config.ts, the README's table): the Temporal target the way Temporal's own tools read it
 * (TEMPORAL_ADDRESS, default 127.0.0.1:7233; TEMPORAL_NAMESPACE, default `default`; TEMPORAL_API_KEY,
 * TEMPORAL_TLS_*, or a profile of a TOML file: TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE), TETHER_TASK_QUEUE
 * (default `tether`), TETHER_FLOOR (the operator's floor file: docs/policy.md#the-operators-floor; default the
 * built-in floor, sandbox enforced), TETHER_PRICES (the operator's model prices), the OTEL_* variables and
 * TETHER_METRICS_PORT (traces and metrics: docs/observability.md), TETHER_MCP_SERVERS (the MCP servers runs may use: docs/mcp.md), DATABASE_URL (else the embedded PostgreSQL in tether's state folder: TETHER_STATE_DIR,
 * default `$XDG_STATE_HOME/tether` or `~/.local/state/tether`), and the model provider variables (see
 * README). A setting that cannot work is one line at start. Migrations run at start. SIGINT or SIGTERM stops
 * it cleanly: running commands get 30 s to finish before they are cancelled and retried elsewhere.
 */
import { waitThroughOutages } from './src/activities/index.js'
import { openAudit } from './src/audit/index.js'
import { WorkerTelemetry } from './src/embed/telemetry.js'
import { createTetherWorker, workerFloor, workerMcpServers, workerPrices } from './src/embed/worker.js'
import { connectTemporalWorker, readConfig, readTelemetry } from './src/stack/config.js'

try {
  const config = readConfig()
  const { temporal, taskQueue } = config
  // Before anything connects: a floor file that does not load stops the worker.
  const floor = workerFloor(config.floor)
  const prices = workerPrices(config.prices)
  const mcpServers = workerMcpServers(config.mcpServers)
  const telemetry = new WorkerTelemetry(readTelemetry())
  await telemetry.start()
  const connection = await connectTemporalWorker(temporal)
  try {
    const audit = await openAudit({
      databaseUrl: config.databaseUrl,
      stateDir: config.stateDir,
      migrate: true,
      outages: waitThroughOutages(),
    })
    try {
      const worker = await createTetherWorker({
        connection,
        namespace: temporal.namespace,
        taskQueue,
        audit,
        floor,
        prices,
        telemetry,
        mcpServers,
        deployment: config.deployment,
        maxCachedWorkflows: config.workflowCache,
      })
      console.log(
        `tether worker: Temporal ${temporal.address} (namespace ${temporal.namespace}, ${temporal.security}), task queue ${taskQueue}, floor ${floor.source}` +
          (mcpServers.length > 0
            ? `, MCP servers ${mcpServers.map((server) => server.name).join(', ')}`
            : '') +
          (config.deployment ? `, build ${config.deployment.name}/${config.deployment.buildId}` : '') +
          (telemetry.prometheusUrl ? `, metrics at ${telemetry.prometheusUrl}` : ''),
      )
      await worker.run()
    } finally {
      await audit.close()
    }
  } finally {
    await connection.close()
    await telemetry.shutdown()
  }
} catch (error) {
  console.error(`tether worker: ${(error as Error).message.split('\n')[0]}`)
  process.exitCode = 1
}
