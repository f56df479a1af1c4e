/** A policy that cannot be used as given. `field` is the path of the bad field (e.g. `layers[2].rules[0].act`). */
export class PolicyError extends Error {
  override name = 'PolicyError'
  constructor(
    message: string,
    readonly field?: string,
    /** The file the policy came from, when it came from one. */
    readonly file?: string,
  ) {
    super(message)
  }
}
