// Renders the cases of a differential corpus with LiquidJS, strictly
// (strictVariables, strictFilters), for prompt's TestLiquidJSDifferential.
//
// Input (stdin): a JSON array of {"template": string, "context": object}.
// Output (stdout): a JSON array, one entry per case, in order:
// {"output": string} or {"error": {"class": "parse"|"missing-parameter"|
// "render-failure", "name": string, "message": string}}.
'use strict'
const { Liquid } = require('liquidjs')

const engine = new Liquid({ strictVariables: true, strictFilters: true })

function classify (e) {
  let err = e
  // A render error wraps the error a tag or filter threw.
  while (err && err.name === 'RenderError' && err.originalError) err = err.originalError
  const name = (err && err.name) || 'Error'
  let cls = 'render-failure'
  if (name === 'UndefinedVariableError') cls = 'missing-parameter'
  else if (name === 'ParseError' || name === 'TokenizationError') cls = 'parse'
  return { class: cls, name, message: String((e && e.message) || e) }
}

async function main () {
  const chunks = []
  for await (const c of process.stdin) chunks.push(c)
  const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  const out = []
  for (const c of cases) {
    let tpl
    try {
      tpl = engine.parse(c.template)
    } catch (e) {
      out.push({ error: classify(e) })
      continue
    }
    try {
      out.push({ output: await engine.render(tpl, c.context || {}) })
    } catch (e) {
      out.push({ error: classify(e) })
    }
  }
  process.stdout.write(JSON.stringify(out))
}

main().catch(e => { console.error(e); process.exit(1) })
