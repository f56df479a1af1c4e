/**
 * The approvals inbox and run viewer: a small web app (`tether inbox`, and part of `tether dev`) over the
 * audit projections and Temporal. Approvers see what waits for them, with its context, and answer — signed
 * in their own browser; anyone with access follows a run live. See docs/inbox.md.
 */
export { type Access, accessProblem, addToken, localToken, readTokens } from './access.js'
export { bundleBrowserScript } from './assets.js'
export { InboxError } from './errors.js'
export { INBOX_PORT, type Inbox, type InboxOptions, startInbox } from './server.js'
