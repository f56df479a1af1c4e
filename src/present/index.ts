/**
 * The words and escapes people read — in the terminal, the inbox, the webhook, the model's observations:
 * commands quoted as bash reads them, invisible characters as escapes, sizes, counts, durations, times,
 * which rule decided and what "remember" would add. Pure; one way each.
 */
export { type ApprovalNotice, approvalMessage, type NoticedApproval, slackText } from './approval-message.js'
export { definitionText, lineDiff } from './diff.js'
export {
  INVISIBLE_CHARACTER,
  INVISIBLE_CLASS,
  invisibleCharacters,
  nameProblem,
  UNPAIRED_SURROGATE,
  unpairedSurrogates,
} from './invisible.js'
export { elapsedText, type InFlight, inFlightWords } from './progress.js'
export { escapeText, formatArgv, isPlainWord, quoteWord, renderCommand, renderExecVerdict } from './render.js'
export {
  backticks,
  type Decider,
  type RememberOffer,
  rememberWords,
  ruleWords,
  words,
} from './rules.js'
export { deadlineSetBy, formatDeadline, localText, span, untilText, utcText } from './time.js'
export { visible } from './visible.js'
export {
  clip,
  clipNoted,
  commandStatus,
  counted,
  exactBytes,
  formatBytes,
  formatCount,
  formatDuration,
  formatMoney,
  overLimit,
  plantedGitWarning,
  resolvedHow,
  runLinkLines,
  seconds,
  workspaceEventWords,
} from './words.js'
