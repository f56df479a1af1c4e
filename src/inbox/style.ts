/**
 * The inbox's stylesheet: small, readable, no framework; served as /assets/app.css. Phone first: one column,
 * controls a thumb can hit (44 px), inputs at 16 px (no zoom on focus); wider screens get two columns and
 * tables. Colour marks what a glance must catch (a failed command, a wait), never the only sign of it.
 */
export const STYLE = `
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #c62828; --live: #9a6700; --accent: #1f6feb;
  --line: #8884; --card: #8881; --add: #1a7f3722; --del: #c6282822; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; }
header.top { display: flex; gap: .3rem 1rem; align-items: center; flex-wrap: wrap; padding: .3rem .8rem;
  border-bottom: 1px solid var(--line); }
header.top nav { display: flex; gap: .2rem; }
header.top nav a, #key-summary { display: inline-block; padding: .6rem .5rem; min-height: 44px; }
header.top nav a { font-weight: 600; }
header.top p { margin: 0; font-size: .95rem; }
main { padding: .8rem .8rem 3rem; max-width: 76rem; margin: 0 auto; overflow-wrap: anywhere; }
h1 { font-size: 1.35rem; line-height: 1.3; overflow-wrap: anywhere; margin: .6rem 0; }
h2 { font-size: 1.15rem; overflow-wrap: anywhere; }
h3 { font-size: 1rem; }
code, pre { font: 14px/1.45 ui-monospace, monospace; }
code { overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; tab-size: 4; background: var(--card); padding: .5rem;
  margin: .2rem 0; max-height: 24rem; overflow: auto; }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible,
summary:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.cards { list-style: none; padding: 0; margin: 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: .2rem .9rem .6rem; margin: 0 0 1rem; }
.card.for-me { border-left: 5px solid var(--accent); }
.card h2 { margin: .6rem 0; }
.card .open { margin: .4rem 0 0; }
.badge { font-size: .8rem; font-weight: 600; background: var(--accent); color: #fff; border-radius: 1rem;
  padding: .05rem .55rem; margin-left: .4rem; white-space: nowrap; }
.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .3rem 1rem; margin: .4rem 0; }
.facts dt { font-weight: 600; }
.facts dd { margin: 0; min-width: 0; }
.goal { white-space: pre-wrap; }
.columns { display: grid; grid-template-columns: minmax(0, 1fr); gap: 0 1.5rem; }
.panel { border: 1px solid var(--line); border-radius: 8px; padding: 0 .9rem .6rem; margin-bottom: 1rem; }
details.panel { padding-top: .2rem; }
summary { cursor: pointer; min-height: 44px; padding: .6rem 0; font-weight: 600; }
label { display: block; font-weight: 600; margin-bottom: .15rem; }
textarea, input[type=text], input[type=file], select { width: 100%; font: inherit; padding: .5rem; min-height: 44px; }
textarea#replacement { font: 15px/1.4 ui-monospace, monospace; }
button, a.button { font: inherit; font-weight: 600; padding: .55rem 1.1rem; min-height: 44px; cursor: pointer;
  border-radius: 6px; border: 1px solid var(--line); background: var(--card); color: inherit; }
a.button { display: inline-block; text-decoration: none; }
.actions { display: flex; flex-wrap: wrap; gap: .6rem; }
.actions button { flex: 1 1 12rem; }
button.approve { background: var(--ok); border-color: var(--ok); color: #fff; }
button.deny { border: 2px solid var(--bad); color: var(--bad); background: transparent; }
button:disabled { opacity: .55; cursor: default; }
.hint { color: GrayText; font-size: .9rem; }
.panel.warning { border-color: var(--live); border-left: 5px solid var(--live); }
.links { padding-left: 1.2rem; }
.ok { color: var(--ok); } .bad { color: var(--bad); } .live { color: var(--live); }
.outcome { font-weight: 600; }
.decision.approved { color: var(--ok); } .decision.denied, .decision.timeout, .decision.cancelled { color: var(--bad); }
#answer-result.error { color: var(--bad); font-weight: 600; }
#answer-result.done { color: var(--ok); font-weight: 600; }
.timeline, .transcript, .commands { padding-left: 0; list-style: none; }
.transcript > li, .commands > li { margin: .5rem 0; }
.timeline > li.step { border-left: 3px solid var(--line); padding: 0 0 .4rem .8rem; margin: 0 0 .8rem; }
.timeline h3 { margin: .2rem 0; display: flex; flex-wrap: wrap; gap: .2rem .8rem; align-items: baseline; }
.step-facts { font-weight: normal; font-size: .9rem; color: GrayText; }
.decision-line { margin: .2rem 0; }
.entries { list-style: none; padding: 0; margin: .3rem 0; }
.entries > li { margin: .35rem 0; }
.entries .command { display: inline; }
.verdict { display: inline-block; min-width: 5.5rem; font-size: .8rem; font-weight: 700; text-transform: uppercase;
  letter-spacing: .03em; }
.verdict.waiting { color: var(--live); }
.calls { margin: .2rem 0; padding-left: 1.2rem; }
.who { font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; color: GrayText; margin-right: .4rem; }
.proof.ok { color: var(--ok); } .proof.bad { color: var(--bad); font-weight: 600; }
.filters { display: flex; gap: .6rem 1rem; align-items: end; flex-wrap: wrap; }
.filters p { margin: 0; flex: 1 1 10rem; }
table.runs { border-collapse: collapse; width: 100%; }
table.runs th, table.runs td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
.pager { display: flex; gap: 1rem; }
pre.diff span { display: block; }
pre.diff .add { background: var(--add); }
pre.diff .del { background: var(--del); }
pre.diff .hunk { color: var(--accent); }
pre.diff .file { font-weight: 700; margin-top: .6rem; }
pre.diff .meta { color: GrayText; }
figure.chart { margin: .4rem 0 1rem; }
figure.chart figcaption { font-size: .9rem; color: GrayText; margin-bottom: .3rem; }
figure.chart ol { list-style: none; padding: 0; margin: 0; }
figure.chart li { display: grid; grid-template-columns: 4.5rem minmax(0, 1fr); align-items: center; gap: .5rem; }
figure.chart svg { width: 100%; height: 14px; }
figure.chart .step-bar { fill: #8886; }
figure.chart .ran-ok { fill: var(--ok); }
figure.chart .ran-bad { fill: var(--bad); }
figure.chart .waited { fill: #d29922; }
@media (max-width: 40rem) {
  .facts { grid-template-columns: minmax(0, 1fr); gap: 0; }
  .facts dt { margin-top: .45rem; font-size: .9rem; color: GrayText; }
  table.runs thead { display: none; }
  table.runs, table.runs tbody, table.runs tr, table.runs td { display: block; width: 100%; }
  table.runs tr { border: 1px solid var(--line); border-radius: 8px; margin-bottom: .8rem; padding: .3rem .5rem; }
  table.runs td { border: 0; padding: .15rem 0; }
  table.runs td::before { content: attr(data-label); display: block; font-size: .8rem; color: GrayText; }
  table.runs caption { display: block; text-align: left; margin-bottom: .4rem; }
}
@media (min-width: 60rem) {
  main { padding: 1rem 1.5rem 3rem; }
  .columns { grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); }
}
`
