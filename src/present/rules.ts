/**
 * The words for which rule decided and what "approve and remember" would add — one wording for the model's
 * observations, the terminal, the webhook and the inbox. Each surface marks the quoted parts its own way
 * (backticks, `<code>`): the functions return pieces, and `code` marks them.
 */

/** What a verdict says about who decided it. */
export interface Decider {
  rule?: string | undefined
  layer?: string | undefined
  act: string
  /** The rule's layer is the worker's floor's. */
  fromFloor?: boolean | undefined
}

/** `rule X in layer Y` (with `(the worker's floor)` when it is), or `the default for ACT`. */
export function ruleWords<T>(decider: Decider, code: (text: string) => T): Array<string | T> {
  if (decider.rule === undefined) return [`the default for ${decider.act}`]
  return [
    'rule ',
    code(decider.rule),
    ' in layer ',
    code(decider.layer ?? '?'),
    ...(decider.fromFloor ? [" (the worker's floor)"] : []),
  ]
}

/** What an approval offers to remember, as requested. */
export type RememberOffer =
  | { exact: string; wider?: string | undefined }
  | { refused: string }
  /** Requests from before offers had two forms. */
  | { pattern: string }

/**
 * `exactly X, or — only when chosen{how} — the wider Y`, `nothing: why`, or `nothing (no rule was
 * offered)`; `how` says how this surface chooses the wider rule (` with --remember wider`).
 */
export function rememberWords<T>(
  offer: RememberOffer | undefined,
  code: (text: string) => T,
  how = '',
): Array<string | T> {
  if (!offer) return ['nothing (no rule was offered)']
  if ('refused' in offer) return [`nothing: ${offer.refused}`]
  if ('pattern' in offer) return ['exactly ', code(offer.pattern)]
  return [
    'exactly ',
    code(offer.exact),
    ...(offer.wider ? [`, or — only when chosen${how} — the wider `, code(offer.wider)] : []),
  ]
}

/** Backticks, for text a terminal, the model or Slack reads. */
export function backticks(text: string): string {
  return `\`${text}\``
}

/** Pieces joined into plain text. */
export function words(pieces: ReadonlyArray<string>): string {
  return pieces.join('')
}
