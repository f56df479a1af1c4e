/** The inbox's stylesheet: small, readable, no framework; served as /assets/app.css. */
export const STYLE = `
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #c62828; --live: #9a6700; --line: #8884; --card: #8881; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; }
header { display: flex; gap: 1.5rem; align-items: baseline; flex-wrap: wrap; padding: .6rem 1.2rem; border-bottom: 1px solid var(--line); }
header nav a { margin-right: 1rem; font-weight: 600; }
header p { margin: 0; }
main { padding: 1rem 1.2rem 3rem; max-width: 78rem; }
h1 { font-size: 1.4rem; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; overflow-wrap: anywhere; }
h3 { font-size: 1rem; }
code, pre { font: 13px/1.4 ui-monospace, monospace; }
code { overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--card); padding: .5rem; margin: .2rem 0; max-height: 24rem; overflow: auto; }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible { outline: 3px solid #1f6feb; outline-offset: 2px; }
.cards { list-style: none; padding: 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .2rem 1rem; margin: 0 0 1rem; }
.card.for-me { border-left: 5px solid #1f6feb; }
.badge { font-size: .8rem; font-weight: 600; background: #1f6feb; color: #fff; border-radius: 1rem; padding: .05rem .55rem; margin-left: .4rem; white-space: nowrap; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
.facts dt { font-weight: 600; }
.facts dd { margin: 0; min-width: 0; }
.goal { white-space: pre-wrap; }
.columns { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 1.5rem; }
@media (max-width: 60rem) { .columns { grid-template-columns: 1fr; } }
.panel { border: 1px solid var(--line); border-radius: 6px; padding: 0 1rem .6rem; margin-bottom: 1rem; }
label { display: block; font-weight: 600; margin-bottom: .15rem; }
fieldset label { display: inline; font-weight: normal; }
fieldset p { margin: .3rem 0; }
textarea, input[type=text], select { width: 100%; font: inherit; padding: .3rem; }
textarea#replacement { font: 13px/1.4 ui-monospace, monospace; }
button { font: inherit; font-weight: 600; padding: .4rem 1rem; cursor: pointer; }
.hint { color: GrayText; font-size: .9rem; }
.ok { color: var(--ok); } .bad { color: var(--bad); } .live { color: var(--live); }
.outcome { font-weight: 600; }
.decision.approved { color: var(--ok); } .decision.denied, .decision.timeout, .decision.cancelled { color: var(--bad); }
#answer-result.error { color: var(--bad); font-weight: 600; }
#answer-result.done { color: var(--ok); font-weight: 600; }
.timeline, .transcript, .commands { padding-left: 1.2rem; }
.timeline > li, .transcript > li, .commands > li { margin: .4rem 0; }
.who { font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; color: GrayText; margin-right: .4rem; }
.proof.ok { color: var(--ok); } .proof.bad { color: var(--bad); font-weight: 600; }
.filters { display: flex; gap: 1rem; align-items: end; flex-wrap: wrap; }
.filters p { margin: 0; }
table.runs { border-collapse: collapse; width: 100%; }
table.runs th, table.runs td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
.pager a { margin-right: 1rem; }
`
