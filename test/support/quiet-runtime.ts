/** Integration tests log Temporal SDK warnings only; the INFO chatter of every Worker hides test output. */
import { DefaultLogger, Runtime } from '@temporalio/worker'

Runtime.install({ logger: new DefaultLogger('WARN') })
