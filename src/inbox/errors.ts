/** A problem with how the inbox is set up (its address, access, tokens or script), in one line for a person. */
export class InboxError extends Error {
  override name = 'InboxError'
}
